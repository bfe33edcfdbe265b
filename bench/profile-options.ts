import { namedArguments, positiveNumber, redisUrl } from './bench-options';
import { type ScenarioId, scenarioIds } from './scenarios';

/** What `npm run bench:profile` profiles, and how. */
export interface ProfileOptions {
  /** The scenarios, in the order given; the first two are compared part by part. */
  scenarios: ScenarioId[];
  /** Seconds of load per scenario while perf samples the demo. */
  seconds: number;
  /** perf's sampling rate, samples per CPU second of the demo. */
  frequencyHz: number;
  connections: number;
  /** The Node.js binary that runs the demo. */
  demoNode: string;
  /** The Redis of the peer's scenarios (n) and (o), as in `npm run bench` (`--redis`). */
  redisUrl?: string;
  /** V8's allocation sampling instead of perf: bytes allocated per request (`--allocations`). */
  allocations?: true;
}

const USAGE = `usage: npm run bench:profile -- --scenarios=a,b [--seconds=S] [--frequency=HZ] [--connections=N] [--node=PATH] [--redis=URL] [--allocations]
  --scenarios: scenario letters of npm run bench, comma-separated; the first two are compared part by part
  --seconds: load per scenario while perf samples (default 8); --frequency: samples per CPU second (default 999)
  --allocations: bytes allocated per request, from V8's sampling heap profiler, instead of perf's CPU`;

/** `--name=value` arguments; the demo's Node.js as in `npm run bench` (`--node`, `BENCH_NODE`). */
export function profileOptions(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  ownNode: string = process.execPath,
): ProfileOptions {
  const args = namedArguments(
    argv,
    ['scenarios', 'seconds', 'frequency', 'connections', 'node', 'redis', 'allocations'],
    USAGE,
  );
  const scenarios = scenarioIds(args.get('scenarios') ?? '');
  if (scenarios.length === 0) throw new Error(`--scenarios is required\n${USAGE}`);
  const positive = (name: string, fallback: number, integer: boolean): number =>
    positiveNumber(`--${name}`, args.get(name), fallback, integer);
  return {
    scenarios,
    seconds: positive('seconds', 8, false),
    frequencyHz: positive('frequency', 999, true),
    connections: positive('connections', 32, true),
    demoNode: args.get('node') || env.BENCH_NODE || ownNode,
    redisUrl: redisUrl(args, env),
    ...(args.get('allocations') === 'true' ? { allocations: true as const } : {}),
  };
}
