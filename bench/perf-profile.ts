/**
 * What `perf` says about one scenario, per request: the demo process's samples, turned into
 * microseconds of CPU per request and grouped by what the innermost frame does (`partOf`), by
 * the JavaScript on whose behalf it ran (`ownerOf`) and, for the library, by its function.
 * Pure functions; `profile.ts` runs perf and prints them.
 *
 * perf samples the process at a fixed rate of its own CPU clock, so a symbol's samples times
 * the sampling period is the CPU time spent in it, whatever the machine did meanwhile. Unlike
 * V8's sampling profiler it stops nothing to take a sample and sees the kernel and V8's own
 * C++ (garbage collector, inline-cache misses), which is most of what a request costs.
 */

/**
 * A scenario's profile per request, by symbol and by owner: microseconds of demo CPU (perf), or
 * bytes allocated (`allocation-profile.ts`).
 */
export interface RequestProfile {
  requests: number;
  /** By the symbol a sample landed in; kernel symbols as `[k] name`. */
  bySymbol: Map<string, number>;
  /** By the JavaScript on whose behalf it ran (`ownerOf`). */
  byOwner: Map<string, number>;
  /** The library's part of `byOwner`, by its function that ran or asked for the work. */
  byLibraryFunction: Map<string, number>;
}

/**
 * Reads `perf script -F ip,sym` of a `perf record -g`: one stack per sample, innermost frame
 * first, kernel frames (addresses of the kernel's upper half) as `[k] name`.
 */
export function parsePerfScript(text: string): string[][] {
  const stacks: string[][] = [];
  let frames: string[] = [];
  for (const line of text.split('\n')) {
    const frame = /^\s*([0-9a-f]+)\s+(.*?)\s*$/.exec(line);
    if (frame) {
      const kernel = frame[1].length === 16 && frame[1].startsWith('ffff');
      frames.push(kernel ? `[k] ${frame[2]}` : frame[2]);
    } else if (line.trim() === '' && frames.length > 0) {
      stacks.push(frames);
      frames = [];
    }
  }
  if (frames.length > 0) stacks.push(frames);
  return stacks;
}

/** Samples taken `frequencyHz` times a CPU second, over `requests` requests. */
export function requestProfile(
  stacks: readonly (readonly string[])[],
  frequencyHz: number,
  requests: number,
): RequestProfile {
  const perSample = 1e6 / frequencyHz;
  return weightedProfile(
    stacks.map((frames) => ({ frames, weight: perSample })),
    requests,
  );
}

/**
 * Stacks (innermost frame first) that each stand for `weight` units (microseconds of CPU,
 * bytes allocated), grouped as `requestProfile` does, per request.
 */
export function weightedProfile(
  stacks: readonly { frames: readonly string[]; weight: number }[],
  requests: number,
): RequestProfile {
  if (requests <= 0) throw new Error('a profile needs at least one request');
  const bySymbol = new Map<string, number>();
  const byOwner = new Map<string, number>();
  const byLibraryFunction = new Map<string, number>();
  const add = (map: Map<string, number>, key: string, share: number) =>
    map.set(key, (map.get(key) ?? 0) + share);
  for (const { frames, weight } of stacks) {
    const share = weight / requests;
    add(bySymbol, frames[0] ?? '[unknown]', share);
    const own = ownFrame(frames);
    add(byOwner, ownerOfFrame(own, frames), share);
    if (own.frame !== undefined && own.owner === 'library')
      add(byLibraryFunction, functionOf(own.frame), share);
  }
  return { requests, bySymbol, byOwner, byLibraryFunction };
}

/** Where the library's files are: the workspace's build of it, or the installed package. */
const LIBRARY_ROOT = /(?:libs\/idempotency|node_modules\/nestjs-pg-idempotency)\/(?:src\/|dist\/)?/;
const LIBRARY_FRAME = new RegExp(`^JS:\\W?(\\S*)\\s+\\S*?${LIBRARY_ROOT.source}(\\S+?):\\d+`);

/** `JS:*render /…/libs/idempotency/src/http/atomic/batched-transaction.js:193:11` -> `render (http/atomic/batched-transaction.js)`. */
function functionOf(frame: string): string {
  const match = LIBRARY_FRAME.exec(frame);
  return match ? `${match[1] || '(anonymous)'} (${match[2]})` : frame;
}

/**
 * The innermost JavaScript frame outside Node's core, with its package; undefined when the
 * stack has none. `core` says whether Node's core had a frame on it.
 */
function ownFrame(
  stack: readonly string[],
): { frame: string; owner: string } | { frame?: undefined; core: boolean } {
  let core = false;
  for (const frame of stack) {
    if (!frame.startsWith('JS:')) continue;
    const owner = packageOf(frame);
    if (owner !== 'Node.js core') return { frame, owner };
    core = true;
  }
  return { core };
}

/**
 * On whose behalf a sample ran: the package of the innermost JavaScript frame outside Node's
 * core (a socket write for pg belongs to pg, a garbage collection that an allocation of the
 * library's started belongs to the library). A stack with Node's core alone belongs to it; one
 * without JavaScript (the event loop's polling, V8's background tasks) to what its innermost
 * frame does.
 */
export function ownerOf(stack: readonly string[]): string {
  return ownerOfFrame(ownFrame(stack), stack);
}

function ownerOfFrame(own: ReturnType<typeof ownFrame>, stack: readonly string[]): string {
  if (own.frame !== undefined) return own.owner;
  if (own.core) return 'Node.js core alone';
  return `no JavaScript: ${partOf(stack[0] ?? '[unknown]')}`;
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
  // Before V8's parts: Node's HTTP parser is no V8 parser.
  if (/^(node::|uv_|uv__|llhttp)/.test(name)) return 'Node.js and libuv (C++)';
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
  if (/malloc|free|^mem|__GI_|^__|libc/.test(name)) return 'libc (memory, system call stubs)';
  return 'V8 other';
}

/** `JS:*parse /path/node_modules/pg-protocol/dist/parser.js:26:10` -> `pg-protocol`. */
function packageOf(frame: string): string {
  if (LIBRARY_ROOT.test(frame)) return 'library';
  if (/apps\/payments-api\//.test(frame)) return 'demo';
  const dependency = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(frame);
  if (dependency) return dependency[1];
  if (/\snode:/.test(frame)) return 'Node.js core';
  return 'other';
}

/** Microseconds per request by part (`partOf` of the innermost frame), with the whole as 'all'. */
export function byPart(profile: RequestProfile): Map<string, number> {
  return withTotal(profile.bySymbol, partOf);
}

/** Microseconds per request by the library's function (`byLibraryFunction`), with its whole as 'all'. */
export function byLibraryFunction(profile: RequestProfile): Map<string, number> {
  return withTotal(profile.byLibraryFunction, (name) => name);
}

/** Microseconds per request by owner (`ownerOf`), with the whole as 'all'. */
export function byOwner(profile: RequestProfile): Map<string, number> {
  return withTotal(profile.byOwner, (owner) => owner);
}

function withTotal(
  values: ReadonlyMap<string, number>,
  groupOf: (key: string) => string,
): Map<string, number> {
  const groups = new Map<string, number>();
  let all = 0;
  for (const [key, microseconds] of values) {
    const group = groupOf(key);
    groups.set(group, (groups.get(group) ?? 0) + microseconds);
    all += microseconds;
  }
  groups.set('all', all);
  return groups;
}

/**
 * A table of groups (`byPart`, `byOwner`), one column per scenario and, when there are two or
 * more, the first minus the second: what the first scenario pays beyond the second, group by
 * group, in `unit`s per request. Groups under `minimum` in every column are left out.
 */
export function formatGroups(
  heading: string,
  columns: readonly { id: string; groups: ReadonlyMap<string, number> }[],
  minimum = 1,
  unit: 'µs' | 'bytes' = 'µs',
): string {
  const digits = DIGITS[unit];
  const compared = columns.length >= 2;
  const difference = (name: string): number =>
    compared ? (columns[0].groups.get(name) ?? 0) - (columns[1].groups.get(name) ?? 0) : 0;
  const rows = [...new Set(columns.flatMap(({ groups }) => [...groups.keys()]))]
    .filter(
      (name) => name === 'all' || columns.some(({ groups }) => (groups.get(name) ?? 0) >= minimum),
    )
    .sort((a, b) =>
      a === 'all' ? -1 : b === 'all' ? 1 : difference(b) - difference(a) || a.localeCompare(b),
    );
  const header = [
    `| ${heading} | `,
    columns.map(({ id }) => `(${id}) ${unit} / request`).join(' | '),
    compared ? ` | (${columns[0].id}) − (${columns[1].id})` : '',
    ' |',
  ].join('');
  const rule = `| --- |${' --- |'.repeat(columns.length + (compared ? 1 : 0))}`;
  const body = rows.map((name) =>
    [
      `| ${name} | `,
      columns.map(({ groups }) => (groups.get(name) ?? 0).toFixed(digits)).join(' | '),
      compared ? ` | ${signed(difference(name), digits)}` : '',
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
  unit: 'µs' | 'bytes' = 'µs',
): string {
  const digits = DIGITS[unit];
  const symbols = new Set([...first.bySymbol.keys(), ...second.bySymbol.keys()]);
  return [...symbols]
    .map((symbol) => ({
      symbol,
      difference: (first.bySymbol.get(symbol) ?? 0) - (second.bySymbol.get(symbol) ?? 0),
    }))
    .sort((a, b) => b.difference - a.difference)
    .slice(0, count)
    .map(
      ({ symbol, difference }) =>
        `${signed(difference, digits).padStart(7)} ${unit}  ${shorten(symbol)}`,
    )
    .join('\n');
}

/** Decimals a unit is printed with: tenths of microseconds, whole bytes. */
const DIGITS = { µs: 1, bytes: 0 } as const;

function signed(value: number, digits = 1): string {
  return `${value >= 0 ? '+' : '−'}${Math.abs(value).toFixed(digits)}`;
}

/** Paths inside the checkout, without the checkout's own path. */
function shorten(symbol: string): string {
  return symbol.replace(/\S*\/node_modules\//g, '').replace(/\S*\/dist\/apps\/payments-api\//g, '');
}
