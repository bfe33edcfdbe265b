/** How long and how hard the benchmark runs. */
export interface BenchOptions {
  /** Rounds of the four scenarios; each round runs every scenario once. */
  rounds: number;
  /** Seconds each scenario runs in each round. */
  durationSeconds: number;
  /** Seconds each scenario runs once before the first round, not measured. */
  warmupSeconds: number;
  /**
   * Seconds a scenario runs, not measured, right before a measured run on a process that idled
   * (a twin, every time): V8 drops much of an idle process's optimised code.
   */
  rewarmSeconds: number;
  connections: number;
  /** A short run for CI: checks that every figure is produced, not what it is. */
  smoke: boolean;
  /**
   * The Node.js binary that runs the demo processes; the benchmark's own by default. Nest's
   * charge for an interceptor depends on it (see docs/benchmark.md, "The Node.js version").
   */
  demoNode: string;
  /**
   * The Redis of the peer library's second pair of scenarios, (n) and (o); without it they do
   * not run (the peer in memory, (l) and (m), always does).
   */
  redisUrl?: string;
}

/**
 * Seconds of unmeasured load before a measured run on a process that idled. Ten seconds brought
 * a demo idle for a minute back to its CPU per create before the idle spell (docs/benchmark.md,
 * "Twins idle between their runs").
 */
export const REWARM_SECONDS = 10;

const FULL: Omit<BenchOptions, 'smoke' | 'demoNode' | 'redisUrl'> = {
  rounds: 5,
  durationSeconds: 5,
  warmupSeconds: 3,
  rewarmSeconds: REWARM_SECONDS,
  connections: 32,
};
const SMOKE: Omit<BenchOptions, 'smoke' | 'demoNode' | 'redisUrl'> = {
  rounds: 1,
  // Two seconds, not one: a create on a busy CI machine can take most of a second, and a run
  // that completes none has no figures to check.
  durationSeconds: 2,
  warmupSeconds: 0.5,
  rewarmSeconds: 0.5,
  connections: 32,
};

const USAGE = `usage: npm run bench [-- --smoke] [--rounds=N] [--duration=S] [--warmup=S] [--rewarm=S] [--connections=N] [--node=PATH] [--redis=URL]
  or the environment: BENCH_ROUNDS, BENCH_DURATION, BENCH_WARMUP, BENCH_REWARM, BENCH_CONNECTIONS, BENCH_NODE, BENCH_REDIS_URL (arguments win)
  --rewarm: seconds of unmeasured load before a measured run on a process that idled, a twin every time (default 10)
  --node: the Node.js binary that runs the demo (default: the one running the benchmark)
  --redis: a Redis for the peer library's records, e.g. redis://127.0.0.1:6379 (default: the peer in memory only)`;

/** `--name=value` arguments first, then `BENCH_<NAME>` variables, then the defaults. */
export function benchOptions(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  ownNode: string = process.execPath,
): BenchOptions {
  const args = namedArguments(
    argv,
    ['smoke', 'rounds', 'duration', 'warmup', 'rewarm', 'connections', 'node', 'redis', 'help'],
    USAGE,
  );
  if (args.has('help')) {
    console.log(USAGE);
    process.exit(0);
  }
  const smoke = args.get('smoke') === 'true' || env.BENCH_SMOKE === '1';
  const defaults = smoke ? SMOKE : FULL;
  const read = (name: string, fallback: number, integer: boolean): number =>
    positiveNumber(name, args.get(name) ?? env[`BENCH_${name.toUpperCase()}`], fallback, integer);
  return {
    rounds: read('rounds', defaults.rounds, true),
    durationSeconds: read('duration', defaults.durationSeconds, false),
    warmupSeconds: read('warmup', defaults.warmupSeconds, false),
    rewarmSeconds: read('rewarm', defaults.rewarmSeconds, false),
    connections: read('connections', defaults.connections, true),
    smoke,
    demoNode: args.get('node') || env.BENCH_NODE || ownNode,
    redisUrl: redisUrl(args, env),
  };
}

/** `--redis=URL`, else `BENCH_REDIS_URL`; undefined when neither is set (or both are empty). */
export function redisUrl(args: Map<string, string>, env: NodeJS.ProcessEnv): string | undefined {
  const url = args.get('redis') || env.BENCH_REDIS_URL || undefined;
  if (url === 'true') throw new Error('--redis needs a URL, e.g. --redis=redis://127.0.0.1:6379');
  return url;
}

/** `--name=value` (or `--name`, read as `true`) arguments by name; any other name throws. */
export function namedArguments(
  argv: readonly string[],
  names: readonly string[],
  usage: string,
): Map<string, string> {
  const args = new Map<string, string>();
  for (const arg of argv) {
    const match = /^--([a-z]+)(?:=(.*))?$/.exec(arg);
    if (!match || !names.includes(match[1])) throw new Error(`unknown argument "${arg}"\n${usage}`);
    args.set(match[1], match[2] ?? 'true');
  }
  return args;
}

/** A positive number (an integer when `integer`), `fallback` when unset or empty. */
export function positiveNumber(
  name: string,
  raw: string | undefined,
  fallback: number,
  integer: boolean,
): number {
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0 || (integer && !Number.isInteger(value))) {
    throw new Error(`${name} must be a positive ${integer ? 'integer' : 'number'}, got "${raw}"`);
  }
  return value;
}
