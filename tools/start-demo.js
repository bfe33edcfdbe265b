'use strict';
/**
 * `npm start`: builds the demo only when its sources changed, then runs it in this process.
 *
 * `nest build` empties its output directory before writing it, so a process that loads `dist/`
 * while another one builds dies with "Cannot find module". Here each build goes to a directory
 * named by the hash of its inputs, `.data/build/<hash>/`, written under a temporary name and
 * renamed into place once complete: a build directory never changes once it exists. Processes
 * that start together take a lock (an atomic mkdir) so that one builds and the others wait for
 * it; correctness does not depend on the lock, only the duplicated work does. `npm run build`
 * (tests, benchmark) still writes `dist/`, which this never touches.
 *
 * package.json runs it with `exec`, so that npm's child is this process: a SIGTERM that npm
 * forwards reaches the demo, and sh does not turn a Ctrl-C the demo handled into a failure.
 *
 * DEMO_BUILD_DIR moves the builds elsewhere inside the checkout, where node_modules is found (the
 * tests start from an empty one).
 */
const { spawnSync } = require('child_process');
const { createHash } = require('crypto');
const fs = require('fs');
const path = require('path');

const ROOT = path.resolve(__dirname, '..');
const BUILDS = path.resolve(ROOT, process.env.DEMO_BUILD_DIR || '.data/build');
/** Everything the build reads, this script included. */
const INPUTS = [
  'apps',
  'libs/idempotency/src',
  'tools/embedded-postgres',
  'migrations',
  'tsconfig.json',
  'nest-cli.json',
  'package-lock.json',
  'tools/start-demo.js',
];
/** Builds kept, the most recently started first; older ones are removed. */
const KEEP = 3;
const WAIT_POLL_MS = 200;
/** A lock without an owner's pid this old was left by a builder that died right after taking it. */
const STALE_LOCK_MS = 60_000;

const log = (line) => console.log(`[start] ${line}`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** SHA-256 over the inputs' relative paths and contents, tests excluded: they are not built. */
function inputsHash() {
  const hash = createHash('sha256');
  const add = (relative) => {
    const absolute = path.join(ROOT, relative);
    if (!fs.existsSync(absolute)) return;
    if (fs.statSync(absolute).isDirectory()) {
      for (const name of fs.readdirSync(absolute).sort()) add(path.join(relative, name));
    } else if (!/\.(e2e-)?spec\.ts$/.test(relative)) {
      hash.update(`${relative}\0`).update(fs.readFileSync(absolute)).update('\0');
    }
  };
  INPUTS.forEach(add);
  return hash.digest('hex').slice(0, 16);
}

function isAlive(pid) {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return error.code === 'EPERM';
  }
  try {
    // A zombie (dead, not yet reaped) still answers kill(pid, 0).
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return true; // no /proc: trust kill()
  }
}

/** Takes the build lock of `hash`, or returns false when the build appeared meanwhile. */
async function lock(lockDir, out) {
  let announced = false;
  for (;;) {
    if (fs.existsSync(out)) return false;
    try {
      fs.mkdirSync(lockDir);
      fs.writeFileSync(path.join(lockDir, 'pid'), String(process.pid));
      return true;
    } catch (error) {
      if (error.code !== 'EEXIST') throw error;
    }
    let owner = 0; // unknown for a moment: mkdir comes before the pid file
    let age = 0;
    try {
      age = Date.now() - fs.statSync(lockDir).mtimeMs;
      owner = Number(fs.readFileSync(path.join(lockDir, 'pid'), 'utf8'));
    } catch {
      // released meanwhile, or its pid not written yet
    }
    if ((owner && !isAlive(owner)) || (!owner && age > STALE_LOCK_MS)) {
      // Its builder died (a Ctrl-C during the build): take over.
      fs.rmSync(lockDir, { recursive: true, force: true });
      continue;
    }
    if (!announced) log(`waiting for process ${owner || '?'}, which builds the same sources`);
    announced = true;
    await sleep(WAIT_POLL_MS);
  }
}

/** `nest build` into a temporary directory, then renamed to `out` in one step. */
function build(out) {
  const partial = `${out}.partial-${process.pid}`;
  const tsconfig = `${partial}.tsconfig.json`;
  fs.writeFileSync(
    tsconfig,
    JSON.stringify({
      extends: path.relative(BUILDS, path.join(ROOT, 'apps/payments-api/tsconfig.app.json')),
      compilerOptions: { outDir: partial },
    }),
  );
  try {
    const nest = require.resolve('@nestjs/cli/bin/nest.js', { paths: [ROOT] });
    // --path must be relative: the CLI joins it to the working directory.
    const args = [nest, 'build', 'payments-api', '--path', path.relative(ROOT, tsconfig)];
    const result = spawnSync(process.execPath, args, { cwd: ROOT, stdio: 'inherit' });
    if (result.status !== 0)
      throw new Error(`nest build failed (exit code ${result.status ?? result.signal})`);
    fs.renameSync(partial, out);
  } finally {
    fs.rmSync(tsconfig, { force: true });
    fs.rmSync(partial, { recursive: true, force: true });
  }
}

/** Removes all but the KEEP most recently started builds, and what dead builders left behind. */
function prune() {
  const builds = [];
  for (const name of fs.readdirSync(BUILDS)) {
    const file = path.join(BUILDS, name);
    const builder = /\.partial-(\d+)/.exec(name);
    if (builder) {
      if (!isAlive(Number(builder[1]))) fs.rmSync(file, { recursive: true, force: true });
    } else if (/^[0-9a-f]{16}$/.test(name)) {
      builds.push({ file, used: fs.statSync(file).mtimeMs });
    }
  }
  builds.sort((a, b) => b.used - a.used);
  for (const { file } of builds.slice(KEEP)) fs.rmSync(file, { recursive: true, force: true });
}

async function main() {
  const started = Date.now();
  const hash = inputsHash();
  const out = path.join(BUILDS, hash);
  fs.mkdirSync(BUILDS, { recursive: true });
  if (fs.existsSync(out)) {
    log(`build ${hash} is up to date (${Date.now() - started} ms)`);
  } else {
    const lockDir = path.join(BUILDS, `${hash}.lock`);
    if (await lock(lockDir, out)) {
      try {
        if (!fs.existsSync(out)) {
          log(`building ${hash} with nest build (the sources changed)`);
          build(out);
          log(`built ${hash} in ${Date.now() - started} ms`);
        }
      } finally {
        fs.rmSync(lockDir, { recursive: true, force: true });
      }
    } else {
      log(`build ${hash} is ready (${Date.now() - started} ms)`);
    }
  }
  // Marks it as recently used, so that pruning keeps it.
  const now = new Date();
  fs.utimesSync(out, now, now);
  prune();
  require(path.join(out, 'apps/payments-api/src/main.js'));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
