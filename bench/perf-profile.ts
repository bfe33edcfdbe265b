/**
 * What `perf report` says about one scenario, per request: samples of the demo process by
 * symbol, turned into microseconds of CPU per request and grouped into the parts a request
 * pays for. Pure functions; `profile.ts` runs perf and prints them.
 *
 * perf samples the process at a fixed rate of its own CPU clock, so a symbol's samples times
 * the sampling period is the CPU time spent in it, whatever the machine did meanwhile. Unlike
 * V8's sampling profiler it stops nothing to take a sample and sees the kernel and V8's own
 * C++ (garbage collector, inline-cache misses), which is most of what a request costs.
 */

/** One line of `perf report -F sample,sym`: how many samples landed in a symbol. */
export interface SymbolSamples {
  symbol: string;
  samples: number;
}

/** A scenario's profile: microseconds of demo CPU per request, by symbol. */
export interface RequestProfile {
  requests: number;
  bySymbol: Map<string, number>;
}

/**
 * Reads `perf report --no-children --sort sym -q -g none -F sample,sym`: one symbol per line,
 * its sample count first. Lines of another shape (headers, blank lines) are skipped.
 */
export function parsePerfReport(text: string): SymbolSamples[] {
  const lines: SymbolSamples[] = [];
  for (const line of text.split('\n')) {
    const match = /^\s*(\d+)\s+(\S.*?)\s*$/.exec(line);
    if (match) lines.push({ samples: Number(match[1]), symbol: match[2] });
  }
  return lines;
}

/** Samples taken `frequencyHz` times a CPU second, over `requests` requests. */
export function requestProfile(
  lines: readonly SymbolSamples[],
  frequencyHz: number,
  requests: number,
): RequestProfile {
  if (requests <= 0) throw new Error('a profile needs at least one request');
  const microsecondsPerSample = 1e6 / frequencyHz;
  const bySymbol = new Map<string, number>();
  for (const { symbol, samples } of lines) {
    bySymbol.set(
      symbol,
      (bySymbol.get(symbol) ?? 0) + (samples * microsecondsPerSample) / requests,
    );
  }
  return { requests, bySymbol };
}

/**
 * The part of a request a symbol belongs to. JavaScript frames (`JS:` from
 * `--perf-basic-prof`) go by the package of their file; V8's and the kernel's own code by what
 * it does. Inline-cache misses are property reads and writes on objects of many shapes.
 */
export function partOf(symbol: string): string {
  const name = symbol.replace(/^\[[.kgu]\]\s+/, '');
  if (symbol.startsWith('[k]')) return 'kernel (system calls, wake-ups, interrupts)';
  if (name.startsWith('JS:')) return `JS ${packageOf(name)}`;
  if (/JsonParser|JsonStringifier/.test(name)) return 'V8 JSON.parse and JSON.stringify';
  if (
    /Scaveng|MarkCompact|ConcurrentMarking|Marking|Sweep|Evacuat|Heap::|Heap_|GCTracer|FreeList|PagedSpace|MemoryAllocator|MemoryChunk|IncrementalMarking|Sweeper/.test(
      name,
    )
  )
    return 'V8 garbage collector';
  if (
    /CompileLazy|compiler::|Compiler|Maglev|Baseline|Deoptimiz|Bytecode|Parser|Scanner/.test(name)
  )
    return 'V8 compilation and lazy closures';
  if (
    /IC_|IC$|ICTrampoline|StubCache|LookupIterator|Transition|MigrateToMap|DescriptorArray|FeedbackVector|GetProperty|SetProperty|Map::|JSObject::/.test(
      name,
    )
  )
    return 'V8 property access (inline caches, lookups)';
  if (/Promise|Microtask|Async|Await|Generator/.test(name))
    return 'V8 promises and async functions';
  if (name.startsWith('Builtins_')) return 'V8 other built-ins';
  if (/^(node::|uv_|uv__)/.test(name)) return 'Node.js and libuv (C++)';
  if (/malloc|free|^mem|__GI_|^__|libc/.test(name)) return 'libc (memory, system call stubs)';
  return 'V8 other';
}

/** `JS:*parse /path/node_modules/pg-protocol/dist/parser.js:26:10` -> `pg-protocol`. */
function packageOf(frame: string): string {
  if (/libs\/idempotency\/|node_modules\/nestjs-pg-idempotency\//.test(frame)) return 'library';
  if (/apps\/payments-api\//.test(frame)) return 'demo';
  const dependency = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(frame);
  if (dependency) return dependency[1];
  if (/\snode:/.test(frame)) return 'Node.js core';
  return 'other';
}

/** Microseconds per request by part, for each profile, with the whole as 'all'. */
export function byPart(profile: RequestProfile): Map<string, number> {
  const parts = new Map<string, number>();
  let all = 0;
  for (const [symbol, microseconds] of profile.bySymbol) {
    const part = partOf(symbol);
    parts.set(part, (parts.get(part) ?? 0) + microseconds);
    all += microseconds;
  }
  parts.set('all', all);
  return parts;
}

/**
 * A table of the parts, one column per scenario and, when there are two or more, the first
 * minus the second: what the first scenario pays beyond the second, part by part. Parts under
 * `minimumMicroseconds` in every column are left out.
 */
export function formatParts(
  profiles: readonly { id: string; profile: RequestProfile }[],
  minimumMicroseconds = 1,
): string {
  const parts = profiles.map(({ profile }) => byPart(profile));
  const names = new Set(parts.flatMap((part) => [...part.keys()]));
  const difference = (name: string): number =>
    parts.length >= 2 ? (parts[0].get(name) ?? 0) - (parts[1].get(name) ?? 0) : 0;
  const rows = [...names]
    .filter(
      (name) =>
        name === 'all' || parts.some((part) => (part.get(name) ?? 0) >= minimumMicroseconds),
    )
    .sort((a, b) =>
      a === 'all' ? -1 : b === 'all' ? 1 : difference(b) - difference(a) || a.localeCompare(b),
    );
  const header = [
    '| part | ',
    profiles.map(({ id }) => `(${id}) µs / request`).join(' | '),
    parts.length >= 2 ? ` | (${profiles[0].id}) − (${profiles[1].id})` : '',
    ' |',
  ].join('');
  const rule = `| --- |${' --- |'.repeat(profiles.length + (parts.length >= 2 ? 1 : 0))}`;
  const body = rows.map((name) =>
    [
      `| ${name} | `,
      parts.map((part) => (part.get(name) ?? 0).toFixed(1)).join(' | '),
      parts.length >= 2 ? ` | ${signed(difference(name))}` : '',
      ' |',
    ].join(''),
  );
  return [header, rule, ...body].join('\n');
}

/** The symbols that make most of the first profile's excess over the second. */
export function formatTopDifferences(
  first: RequestProfile,
  second: RequestProfile,
  count: number,
): string {
  const symbols = new Set([...first.bySymbol.keys(), ...second.bySymbol.keys()]);
  return [...symbols]
    .map((symbol) => ({
      symbol,
      difference: (first.bySymbol.get(symbol) ?? 0) - (second.bySymbol.get(symbol) ?? 0),
    }))
    .sort((a, b) => b.difference - a.difference)
    .slice(0, count)
    .map(({ symbol, difference }) => `${signed(difference).padStart(7)} µs  ${shorten(symbol)}`)
    .join('\n');
}

function signed(value: number): string {
  return `${value >= 0 ? '+' : '−'}${Math.abs(value).toFixed(1)}`;
}

/** Paths inside the checkout, without the checkout's own path. */
function shorten(symbol: string): string {
  return symbol.replace(/\S*\/node_modules\//g, '').replace(/\S*\/dist\/apps\/payments-api\//g, '');
}
