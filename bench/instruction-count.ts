/**
 * What `callgrind_control -e Ir <pid>` prints, per thread, and what the instructions report of
 * `npm run bench:instructions` says about it. Pure functions: the script runs valgrind.
 */

/** Instructions per request of one scenario: the main thread's (JavaScript, the event loop) and all threads'. */
export interface InstructionCount {
  id: string;
  title: string;
  requests: number;
  mainPerRequest: number;
  allPerRequest: number;
}

/**
 * The instructions of each thread since the last zeroing, from `callgrind_control -e Ir`:
 * lines such as `   Th 1  484,796,382`. Thread 1 is the main thread.
 */
export function instructionsByThread(output: string): Map<number, number> {
  const threads = new Map<number, number>();
  for (const [, thread, count] of output.matchAll(/^\s*Th (\d+)\s+([\d,]+)\s*$/gm)) {
    threads.set(Number(thread), Number(count.replace(/,/g, '')));
  }
  if (!threads.has(1)) throw new Error(`no count for the main thread in:\n${output}`);
  return threads;
}

const PAIRS: readonly { over: string; under: string; says: string }[] = [
  { over: 'c', under: 'g', says: 'a cached replay over the bare route (target 1.2 in CPU)' },
  { over: 'k', under: 'g', says: "Nest's part: an interceptor that answers" },
  { over: 'c', under: 'k', says: "the library's part of a cached replay" },
  { over: 'a', under: 'b', says: 'a create over the plain handler' },
  { over: 'j', under: 'b', says: "Nest's part: an interceptor around the handler" },
  { over: 'a', under: 'j', says: "the library's part of a create" },
  { over: 'a', under: 'n', says: "a create over the peer's on Redis" },
  { over: 'a', under: 'l', says: "a create over the peer's in memory" },
  { over: 'c', under: 'o', says: "a cached replay over the peer's on Redis" },
  { over: 'c', under: 'm', says: "a cached replay over the peer's in memory" },
];

function thousands(instructions: number): string {
  return `${(instructions / 1000).toFixed(1)}k`;
}

/** The table of counts, then each pair of the scenarios measured: ratio and difference. */
export function formatInstructionReport(counts: readonly InstructionCount[]): string {
  const lines = [
    '| | Scenario | requests | main thread / request | all threads / request |',
    '| --- | --- | --- | --- | --- |',
    ...counts.map(
      (count) =>
        `| (${count.id}) | ${count.title} | ${count.requests} | ${thousands(count.mainPerRequest)} | ${thousands(count.allPerRequest)} |`,
    ),
  ];
  const byId = new Map(counts.map((count) => [count.id, count]));
  const pairs = PAIRS.filter(({ over, under }) => byId.has(over) && byId.has(under));
  if (pairs.length > 0) {
    lines.push('', 'Main-thread instructions, pair by pair:', '');
    const main = (id: string): number => byId.get(id)?.mainPerRequest ?? Number.NaN;
    for (const { over, under, says } of pairs) {
      const a = main(over);
      const b = main(under);
      const sign = a >= b ? '+' : '−';
      lines.push(
        `- (${over}) / (${under}) ${(a / b).toFixed(3)}, (${over}) − (${under}) ${sign}${thousands(Math.abs(a - b))}: ${says}`,
      );
    }
  }
  return lines.join('\n');
}
