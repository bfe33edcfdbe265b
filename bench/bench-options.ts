/** How long and how hard the benchmark runs. */
export interface BenchOptions {
  /** Rounds of the four scenarios; each round runs every scenario once. */
  rounds: number;
  /** Seconds each scenario runs in each round. */
  durationSeconds: number;
  /** Seconds each scenario runs once before the first round, not measured. */
  warmupSeconds: number;
  connections: number;
  /** A short run for CI: checks that every figure is produced, not what it is. */
  smoke: boolean;
}

const FULL: Omit<BenchOptions, 'smoke'> = {
  rounds: 5,
  durationSeconds: 5,
  warmupSeconds: 3,
  connections: 32,
};
const SMOKE: Omit<BenchOptions, 'smoke'> = {
  rounds: 1,
  // Two seconds, not one: a create on a busy CI machine can take most of a second, and a run
  // that completes none has no figures to check.
  durationSeconds: 2,
  warmupSeconds: 0.5,
  connections: 32,
};

const USAGE = `usage: npm run bench [-- --smoke] [--rounds=N] [--duration=S] [--warmup=S] [--connections=N]
  or the environment: BENCH_ROUNDS, BENCH_DURATION, BENCH_WARMUP, BENCH_CONNECTIONS (arguments win)`;

/** `--name=value` arguments first, then `BENCH_<NAME>` variables, then the defaults. */
export function benchOptions(argv: readonly string[], env: NodeJS.ProcessEnv): BenchOptions {
  const args = new Map<string, string>();
  for (const arg of argv) {
    const match = /^--([a-z]+)(?:=(.*))?$/.exec(arg);
    if (
      !match ||
      !['smoke', 'rounds', 'duration', 'warmup', 'connections', 'help'].includes(match[1])
    ) {
      throw new Error(`unknown argument "${arg}"\n${USAGE}`);
    }
    args.set(match[1], match[2] ?? 'true');
  }
  if (args.has('help')) {
    console.log(USAGE);
    process.exit(0);
  }
  const smoke = args.get('smoke') === 'true' || env.BENCH_SMOKE === '1';
  const defaults = smoke ? SMOKE : FULL;
  const read = (name: string, fallback: number, integer: boolean): number => {
    const raw = args.get(name) ?? env[`BENCH_${name.toUpperCase()}`];
    if (raw === undefined || raw === '') return fallback;
    const value = Number(raw);
    if (!Number.isFinite(value) || value <= 0 || (integer && !Number.isInteger(value))) {
      throw new Error(`${name} must be a positive ${integer ? 'integer' : 'number'}, got "${raw}"`);
    }
    return value;
  };
  return {
    rounds: read('rounds', defaults.rounds, true),
    durationSeconds: read('duration', defaults.durationSeconds, false),
    warmupSeconds: read('warmup', defaults.warmupSeconds, false),
    connections: read('connections', defaults.connections, true),
    smoke,
  };
}
