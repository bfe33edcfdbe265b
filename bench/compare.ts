import { randomUUID } from 'node:crypto';
import { type BenchDatabase, openBenchDatabase } from './bench-database';
import { REWARM_SECONDS } from './bench-options';
import { appCpuPerRequest, requestsPerSecond } from './bench-report';
import { compareOptions } from './compare-options';
import { type BuildRun, type ComparedScenario, formatComparison } from './compare-report';
import { pinCpus } from './cpu-pinning';
import { DemoProcess, nodeVersion } from './demo-process';
import { completeReplayKeys } from './replay-keys';
import { idledTooLong, rewarm, runScenario, warmUp } from './run-scenario';
import { chosenScenarios, expectedStatuses, type Scenario, variantEnvironment } from './scenarios';

interface Build {
  name: 'baseline' | 'candidate';
  demo: DemoProcess;
  /**
   * The scenarios with keys of this build's own: each build completes its replay keys as
   * creates, so that both processes start from the same history (one that replayed the other's
   * keys instead measured about 6% cheaper on the same code).
   */
  scenarios: Scenario[];
  lastLoaded?: number;
}

/**
 * `npm run bench:compare`: this checkout's build (the candidate) against another build of the
 * demo (the baseline, a copy of `dist/` made before the change), side by side in one run. Both
 * demos run on the demo CPU, one under load at a time; each round runs every scenario on both,
 * the order of the two builds swapped from one round to the next, so that drift and a slow spell
 * fall on both. A change of a few per cent shows here where two full runs of `npm run bench`,
 * minutes apart, differ by more. A scenario the change does not touch is the control: its ratio
 * is the two processes' own difference.
 */
async function main(): Promise<void> {
  const options = compareOptions(process.argv.slice(2), process.env);
  const pinning = pinCpus();
  let database: BenchDatabase | undefined;
  const builds: Build[] = [];
  try {
    database = await openBenchDatabase(process.env);
    // The peer's Redis route is the default process's only, as in npm run bench.
    const redis = options.variant === 'default' && options.redisUrl !== undefined;
    const environment = variantEnvironment(options.variant, options.redisUrl);
    for (const [name, entry] of [
      ['baseline', options.baselineMain],
      ['candidate', undefined],
    ] as const) {
      const demo = await DemoProcess.start(
        database.url,
        pinning?.demoCpu,
        options.demoNode,
        false,
        environment,
        [],
        entry,
      );
      const runId = randomUUID().slice(0, 8);
      builds.push({ name, demo, scenarios: chosenScenarios(runId, options.scenarios, redis) });
      await completeReplayKeys(demo, runId, redis);
    }
    console.log(
      `bench:compare: ${database.description}, ${options.variant} demos on Node.js ${nodeVersion(options.demoNode)}` +
        `${pinning ? ` on CPU ${pinning.demoCpu}` : ''}, ${options.connections} connections, ` +
        `${options.rounds} rounds of ${options.durationSeconds} s per scenario and build\n` +
        `baseline: ${options.baselineMain}\n`,
    );
    for (const index of options.scenarios.keys()) {
      for (const build of builds) {
        await warmUp(build.demo, database, build.scenarios[index], options);
        build.lastLoaded = Date.now();
      }
    }
    const compared = await measure(builds, database, options);
    console.log(`\n${formatComparison(compared)}`);
  } finally {
    for (const build of builds) await build.demo.stop();
    await database?.close();
  }
}

async function measure(
  builds: Build[],
  database: BenchDatabase,
  options: { rounds: number; durationSeconds: number; connections: number },
): Promise<ComparedScenario[]> {
  const compared = builds[0].scenarios.map((scenario) => ({
    id: scenario.id,
    title: scenario.title,
    baseline: [] as BuildRun[],
    candidate: [] as BuildRun[],
  }));
  for (let round = 1; round <= options.rounds; round++) {
    const order = round % 2 === 1 ? builds : [...builds].reverse();
    const line: string[] = [];
    for (const index of compared.keys()) {
      for (const build of order) {
        const scenario = build.scenarios[index];
        if (idledTooLong(build.lastLoaded)) {
          await rewarm(build.demo, database, scenario, {
            connections: options.connections,
            rewarmSeconds: REWARM_SECONDS,
          });
        }
        const run = await runScenario(build.demo, database, scenario, `r${round}`, {
          connections: options.connections,
          durationSeconds: options.durationSeconds,
        });
        build.lastLoaded = Date.now();
        const allowed = expectedStatuses(scenario.id);
        const wrong = [...run.statusCounts].filter(([status]) => !allowed.includes(status));
        if (wrong.length > 0 || run.errors > 0 || run.serverRequests === 0) {
          throw new Error(
            `(${scenario.id}) on the ${build.name}: answers ${wrong.map(([status, count]) => `${count}x ${status}`).join(', ') || 'none other'}, ${run.errors} without an answer`,
          );
        }
        const figures: BuildRun = {
          cpuMs: appCpuPerRequest(run),
          requestsPerSecond: requestsPerSecond(run),
        };
        compared[index][build.name].push(figures);
        line.push(`${scenario.id} ${build.name} ${(figures.cpuMs * 1000).toFixed(1)} µs`);
      }
    }
    console.log(`round ${round}/${options.rounds}: ${line.join(', ')}`);
  }
  return compared;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
