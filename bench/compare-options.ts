import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { namedArguments, positiveNumber, redisUrl } from './bench-options';
import { REPO_ROOT } from './repo-paths';
import {
  type DemoVariant,
  type ScenarioId,
  scenarioIds,
  scenarios as allScenarios,
} from './scenarios';

/** What `npm run bench:compare` compares, and how long. */
export interface CompareOptions {
  /** The baseline build's demo entry file, in a copy of `dist/` made before the change. */
  baselineMain: string;
  scenarios: ScenarioId[];
  /** The demo process the scenarios run on, with its settings (`twin`, `uncached`, ...). */
  variant: DemoVariant;
  rounds: number;
  durationSeconds: number;
  warmupSeconds: number;
  connections: number;
  /** The Node.js binary that runs both demos. */
  demoNode: string;
  redisUrl?: string;
}

/** Where `npm run build` leaves the demo's entry file, inside a build directory. */
export const DEMO_ENTRY = 'apps/payments-api/apps/payments-api/src/main.js';

const USAGE = `usage: npm run bench:compare -- --baseline=DIR [--scenarios=c,g] [--rounds=N] [--duration=S] [--warmup=S] [--connections=N] [--node=PATH] [--redis=URL]
  --baseline: a copy of dist/ built before the change (cp -r dist dist-baseline), inside the repository
  --scenarios: scenario letters of npm run bench, default c,g, all on one kind of demo process (h alone, say); add one the change does not touch as a control
  --rounds: alternating rounds (default 6); --duration: seconds per measured run (default 5); --warmup (default 2)`;

/** `--name=value` arguments; the demo's Node.js and Redis as in `npm run bench`. */
export function compareOptions(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  ownNode: string = process.execPath,
  exists: (path: string) => boolean = existsSync,
): CompareOptions {
  const args = namedArguments(
    argv,
    ['baseline', 'scenarios', 'rounds', 'duration', 'warmup', 'connections', 'node', 'redis'],
    USAGE,
  );
  const baseline = args.get('baseline');
  if (!baseline || baseline === 'true') throw new Error(`--baseline=DIR is required\n${USAGE}`);
  const baselineMain = resolve(REPO_ROOT, baseline, DEMO_ENTRY);
  if (!exists(baselineMain)) {
    throw new Error(
      `${baselineMain} is missing: --baseline names a copy of dist/ with the demo built`,
    );
  }
  const scenarios = scenarioIds(args.get('scenarios') ?? 'c,g');
  if (scenarios.length === 0) throw new Error(`--scenarios names no scenario\n${USAGE}`);
  // Each build runs one demo process: the scenarios must share its settings.
  const variantOf = new Map(allScenarios('', true).map((each) => [each.id, each.variant]));
  const variants = new Set(scenarios.map((id) => variantOf.get(id) ?? 'default'));
  if (variants.size > 1) {
    throw new Error(
      `scenarios ${scenarios.map((id) => `${id} (${variantOf.get(id)})`).join(', ')} run on demo processes with different settings: compare one kind at a time`,
    );
  }
  const [variant] = variants;
  const positive = (name: string, fallback: number, integer: boolean): number =>
    positiveNumber(`--${name}`, args.get(name), fallback, integer);
  return {
    baselineMain,
    scenarios,
    variant,
    rounds: positive('rounds', 6, true),
    durationSeconds: positive('duration', 5, false),
    warmupSeconds: positive('warmup', 2, false),
    connections: positive('connections', 32, true),
    demoNode: args.get('node') || env.BENCH_NODE || ownNode,
    redisUrl: redisUrl(args, env),
  };
}
