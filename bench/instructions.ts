import { execFileSync, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { type BenchDatabase, openBenchDatabase } from './bench-database';
import { namedArguments, positiveNumber, redisUrl } from './bench-options';
import { DemoProcess, nodeVersion } from './demo-process';
import {
  formatInstructionReport,
  type InstructionCount,
  instructionsByThread,
} from './instruction-count';
import { completeReplayKeys } from './replay-keys';
import { runScenario, type ScenarioRun } from './run-scenario';
import { chosenScenarios, type Scenario, scenarioIds, variantEnvironment } from './scenarios';

const USAGE = `usage: npm run bench:instructions -- [--scenarios=c,k,g] [--warmup=N] [--requests=N] [--connections=N] [--node=PATH] [--redis=URL]
  --scenarios: scenario letters of npm run bench (default a,b,j,c,k,g)
  --warmup: requests before counting (default 3000); --requests: requests counted (default 2000)`;

/** Requests after the counting starts and before it is zeroed: code that instrumentation changed settles. */
const SETTLING_REQUESTS = 200;
/** Replays from the database need their keys completed first, on the process that serves them. */
const REPLAYS = new Set(['c', 'h', 'm', 'o']);

/**
 * `npm run bench:instructions`: machine instructions per request, counted by valgrind's
 * callgrind on a demo process of its own per scenario. Unlike CPU time, the main thread's count
 * repeats to a few hundred instructions per request from one run to the next, whatever else the
 * machine does: a change of a percent shows. It counts work, not its cost: a cache miss or a
 * system call's kernel time counts as the instructions around it (see docs/benchmark.md).
 */
async function main(): Promise<void> {
  const args = namedArguments(
    process.argv.slice(2),
    ['scenarios', 'warmup', 'requests', 'connections', 'node', 'redis'],
    USAGE,
  );
  const ids = scenarioIds(args.get('scenarios') ?? 'a,b,j,c,k,g');
  const warmup = positiveNumber('--warmup', args.get('warmup'), 3000, true);
  const requests = positiveNumber('--requests', args.get('requests'), 2000, true);
  const connections = positiveNumber('--connections', args.get('connections'), 8, true);
  const node = args.get('node') || process.env.BENCH_NODE || process.execPath;
  const redis = redisUrl(args, process.env);
  assertCallgrindRuns();
  const runId = randomUUID().slice(0, 8);
  const chosen = chosenScenarios(runId, ids, redis !== undefined);
  const database = await openBenchDatabase(process.env);
  const counts: InstructionCount[] = [];
  try {
    for (const scenario of chosen) {
      counts.push(
        await count(database, scenario, { runId, warmup, requests, connections, node, redis }),
      );
      const last = counts[counts.length - 1];
      console.log(
        `(${last.id}) ${last.title}: ${(last.mainPerRequest / 1000).toFixed(1)}k instructions per request on the main thread`,
      );
    }
  } finally {
    await database.close();
  }
  console.log(`\nInstructions per request (callgrind, Node.js ${nodeVersion(node)}):\n`);
  console.log(formatInstructionReport(counts));
}

interface CountSettings {
  runId: string;
  warmup: number;
  requests: number;
  connections: number;
  node: string;
  redis?: string;
}

/** One scenario on a fresh demo under callgrind, counting only once it is warm. */
async function count(
  database: BenchDatabase,
  scenario: Scenario,
  settings: CountSettings,
): Promise<InstructionCount> {
  const demo = await DemoProcess.start(
    database.url,
    undefined,
    settings.node,
    false,
    variantEnvironment(scenario.variant, settings.redis),
    // Counting off until warm; JIT code rewrites itself, which valgrind must be told to watch.
    [
      'valgrind',
      '--tool=callgrind',
      '--instr-atstart=no',
      '--smc-check=all-non-file',
      // Only the counters are read: the profile it writes at exit goes nowhere.
      '--callgrind-out-file=/dev/null',
    ],
  );
  try {
    if (REPLAYS.has(scenario.id))
      await completeReplayKeys(demo, settings.runId, settings.redis !== undefined);
    const run = (amount: number): Promise<ScenarioRun> =>
      runScenario(demo, database, scenario, 'instructions', {
        connections: settings.connections,
        durationSeconds: 0,
        amount,
      });
    await run(settings.warmup);
    callgrindControl(['--instr=on', String(demo.pid)]);
    await run(SETTLING_REQUESTS);
    callgrindControl(['--zero', String(demo.pid)]);
    const measured = await run(settings.requests);
    const unexpected = [...measured.statusCounts].filter(([status]) => status !== 201);
    if (unexpected.length > 0 && scenario.id !== 'd')
      throw new Error(`(${scenario.id}) answered ${JSON.stringify(unexpected)}: not counted`);
    const threads = instructionsByThread(callgrindControl(['-e', 'Ir', String(demo.pid)]));
    const all = [...threads.values()].reduce((sum, each) => sum + each, 0);
    return {
      id: scenario.id,
      title: scenario.title,
      requests: measured.serverRequests,
      mainPerRequest: (threads.get(1) ?? 0) / measured.serverRequests,
      allPerRequest: all / measured.serverRequests,
    };
  } finally {
    await demo.stop();
  }
}

function callgrindControl(args: string[]): string {
  return execFileSync('callgrind_control', args, {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** valgrind must be installed; said plainly when it is not. */
function assertCallgrindRuns(): void {
  const probe = spawnSync('valgrind', ['--version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) {
    throw new Error('npm run bench:instructions needs valgrind (Debian: apt-get install valgrind)');
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
