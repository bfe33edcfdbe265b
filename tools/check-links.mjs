#!/usr/bin/env node
/**
 * `npm run docs:check`: every link between the repository's Markdown files resolves.
 *
 * For each `*.md` file (node_modules, .data, dist and dot-folders left out) it checks:
 * - every relative link, `[text](path#anchor)`, `[label]: path` or `href="path"`: the file or
 *   folder exists, and the anchor is a heading of the target (GitHub's slugs) or an `id`/`name`;
 * - every absolute link into this repository (`<repository>/blob/main/<path>#anchor`, the form
 *   the npm README must use): the same, on the local file;
 * - that the Markdown files npm ships with the package have no relative links, which npm cannot
 *   follow.
 * Other absolute URLs are not fetched: the check needs no network and no dependency.
 *
 * Prints one line per broken link and exits with 1, or a summary and 0.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const IGNORED_DIRS = new Set(['node_modules', '.data', 'dist']);
const PACKAGE_DIR = 'libs/idempotency';

/** The repository's URL without `git+` and `.git`, from the package's `repository` field. */
function repositoryBase() {
  const pkg = JSON.parse(readFileSync(join(ROOT, PACKAGE_DIR, 'package.json'), 'utf8'));
  const url = typeof pkg.repository === 'string' ? pkg.repository : pkg.repository?.url;
  return url ? url.replace(/^git\+/, '').replace(/\.git$/, '') : undefined;
}

/** The Markdown files npm packs with the library (its `files` field, plus the README npm always takes). */
function shippedMarkdown() {
  const pkg = JSON.parse(readFileSync(join(ROOT, PACKAGE_DIR, 'package.json'), 'utf8'));
  const names = new Set([...(pkg.files ?? []), 'README.md'].filter((name) => name.endsWith('.md')));
  return new Set([...names].map((name) => `${PACKAGE_DIR}/${name}`));
}

function markdownFiles(dir = ROOT) {
  const found = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) {
      if (!IGNORED_DIRS.has(entry.name) && !entry.name.startsWith('.'))
        found.push(...markdownFiles(join(dir, entry.name)));
    } else if (entry.name.endsWith('.md')) {
      found.push(join(dir, entry.name));
    }
  }
  return found;
}

/** Replaces every character but line breaks, so that offsets and line numbers stay true. */
const blank = (text) => text.replace(/[^\n]/g, ' ');

/**
 * The file's text with fenced code blocks blanked out, and inline code spans too unless
 * `keepSpans` (a heading keeps their text): links and headings inside code are examples.
 */
function proseOf(text, keepSpans = false) {
  const lines = text.split('\n');
  let fence = null; // the opening fence (``` or ~~~, and its length) while inside a block
  for (let i = 0; i < lines.length; i++) {
    const opening = /^ {0,3}(`{3,}|~{3,})/.exec(lines[i]);
    if (fence) {
      const closes = opening && opening[1][0] === fence[0] && opening[1].length >= fence.length;
      if (closes && /^ {0,3}[`~]+\s*$/.test(lines[i])) fence = null;
      lines[i] = blank(lines[i]);
    } else if (opening) {
      fence = opening[1];
      lines[i] = blank(lines[i]);
    }
  }
  if (keepSpans) return lines.join('\n');
  // A code span: a run of backticks, then anything up to a run of the same length.
  return lines.join('\n').replace(/(`+)(?!`)([\s\S]*?[^`])\1(?!`)/g, (span) => blank(span));
}

/** A heading's text as GitHub renders it: no markup, no trailing `#`s. */
function headingText(raw) {
  return raw
    .replace(/[ \t]+#+[ \t]*$/, '')
    .replace(/!\[([^\]]*)\]\([^)]*\)/g, '$1') // images: their alt text
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1') // links: their text
    .replace(/\[([^\]]*)\]\[[^\]]*\]/g, '$1')
    .replace(/<[^>]+>/g, '') // HTML tags
    .replace(/`+/g, '') // code spans keep their text
    .replace(/(^|[^\w])(\*{1,3}|_{1,3})(?=\S)([\s\S]*?\S)\2(?=[^\w]|$)/g, '$1$3') // emphasis
    .replace(/\\(.)/g, '$1')
    .trim();
}

/**
 * GitHub's anchor for a heading (github-slugger): lower case, every character that is not a
 * letter, mark, number, connector (`_`), hyphen or space removed, spaces turned into hyphens.
 */
function slug(text) {
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '')
    .replace(/ /g, '-');
}

/** Every anchor a file offers: its headings' slugs (`-1`, `-2` for repeats) and HTML ids. */
function anchorsOf(text) {
  const prose = proseOf(text, true);
  const anchors = new Set();
  const occurrences = new Map(); // as github-slugger counts them
  const add = (heading) => {
    const original = slug(headingText(heading));
    let result = original;
    while (occurrences.has(result)) {
      occurrences.set(original, occurrences.get(original) + 1);
      result = `${original}-${occurrences.get(original)}`;
    }
    occurrences.set(result, 0);
    anchors.add(result);
  };
  const lines = prose.split('\n');
  lines.forEach((line, i) => {
    const atx = /^ {0,3}#{1,6}(?:[ \t]+(.*))?$/.exec(line);
    if (atx) return add(atx[1] ?? '');
    // A setext heading: a line of text underlined with = or -.
    const previous = lines[i - 1];
    if (
      /^ {0,3}(=+|-+)[ \t]*$/.test(line) &&
      previous?.trim() &&
      !/^ {0,3}([#>|*+-]|\d+[.)])/.test(previous)
    ) {
      add(previous.trim());
    }
  });
  for (const match of prose.matchAll(/<[a-z][^>]*\s(?:id|name)\s*=\s*["']([^"']+)["']/gi))
    anchors.add(match[1]);
  return anchors;
}

/** Every link destination in a file, with its line: inline links, reference definitions, HTML. */
function linksOf(text) {
  const prose = proseOf(text);
  const lineAt = (offset) => prose.slice(0, offset).split('\n').length;
  const links = [];
  // [text](destination "title"): the text may hold one level of brackets and span lines.
  const inline =
    /!?\[(?:[^[\]]|\[[^[\]]*\])*\]\(\s*(<[^>\n]*>|(?:[^\s()]|\([^\s()]*\))*)(?:\s+(?:"[^"]*"|'[^']*'|\([^)]*\)))?\s*\)/g;
  for (const match of prose.matchAll(inline))
    links.push({ target: match[1].replace(/^<|>$/g, ''), line: lineAt(match.index) });
  for (const match of prose.matchAll(/^ {0,3}\[[^\]]+\]:[ \t]*(<[^>\n]*>|\S+)/gm)) {
    links.push({ target: match[1].replace(/^<|>$/g, ''), line: lineAt(match.index) });
  }
  for (const match of prose.matchAll(/<[a-z][^>]*\s(?:href|src)\s*=\s*["']([^"']*)["']/gi)) {
    links.push({ target: match[1], line: lineAt(match.index) });
  }
  return links.sort((a, b) => a.line - b.line);
}

const base = repositoryBase();
const shipped = shippedMarkdown();
const files = markdownFiles();
const anchorCache = new Map();
const anchorsOfFile = (file) => {
  if (!anchorCache.has(file)) anchorCache.set(file, anchorsOf(readFileSync(file, 'utf8')));
  return anchorCache.get(file);
};

const failures = [];
let checked = 0;
for (const file of files) {
  const name = relative(ROOT, file).split(sep).join('/');
  for (const { target, line } of linksOf(readFileSync(file, 'utf8'))) {
    const where = `${name}:${line}`;
    let local; // the link as a path from the repository's root (leading /) or from this file
    const inRepository =
      base && target.startsWith(`${base}/`)
        ? /^\/(?:blob|tree)\/main\/(.*)$/.exec(target.slice(base.length))
        : null;
    if (inRepository) {
      local = '/' + inRepository[1];
    } else if (/^[a-z][a-z0-9+.-]*:|^\/\//i.test(target)) {
      continue; // another site, or another part of GitHub (issues): not checked
    } else {
      if (shipped.has(name))
        failures.push(
          `${where}: ${target}: npm shows this file, and cannot follow a relative link; use ${base ?? 'the repository URL'}/blob/main/…`,
        );
      local = target;
    }
    checked++;
    const hash = local.indexOf('#');
    let pathPart, anchor;
    try {
      pathPart = decodeURI(hash < 0 ? local : local.slice(0, hash));
      anchor = hash < 0 ? undefined : decodeURIComponent(local.slice(hash + 1));
    } catch {
      failures.push(`${where}: ${target}: not a valid URL`);
      continue;
    }
    // A path starting with / is relative to the repository's root, as on GitHub.
    const resolved =
      pathPart === ''
        ? file
        : pathPart.startsWith('/')
          ? join(ROOT, pathPart)
          : resolve(dirname(file), pathPart);
    if (!existsSync(resolved)) {
      failures.push(`${where}: ${target}: ${relative(ROOT, resolved) || '.'} does not exist`);
      continue;
    }
    if (
      anchor &&
      statSync(resolved).isFile() &&
      resolved.endsWith('.md') &&
      !anchorsOfFile(resolved).has(anchor)
    ) {
      failures.push(
        `${where}: ${target}: ${relative(ROOT, resolved)} has no heading or id "#${anchor}"`,
      );
    }
  }
}

if (failures.length > 0) {
  console.error(`docs:check: ${failures.length} broken link${failures.length === 1 ? '' : 's'}:`);
  for (const failure of failures) console.error(`  ${failure}`);
  process.exit(1);
}
console.log(`docs:check: ${checked} links in ${files.length} Markdown files, all resolve`);
