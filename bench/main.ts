import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { type BenchDatabase, openBenchDatabase } from './bench-database';
import { type BenchOptions, benchOptions } from './bench-options';
import { benchFigures, formatFigures, invalidities } from './bench-report';
import { type CpuPinning, pinCpus } from './cpu-pinning';
import { DemoProcess, nodeVersion } from './demo-process';
import { idledTooLong, rewarm, runScenario, type ScenarioRun, warmUp } from './run-scenario';
import { formatSlowKeyProbe, probeSlowKey } from './slow-key-probe';
import { completeReplayKeys } from './replay-keys';
import { formatRoundTripCosts, probeRoundTrips, roundTripProblems } from './round-trip-probe';
import {
  type Scenario,
  type ScenarioId,
  scenarios,
  type DemoVariant,
  variantEnvironment,
} from './scenarios';

/**
 * `npm run bench`: the demo in its own process on a real PostgreSQL, driven over HTTP by
 * autocannon. Rounds alternate the scenarios, forwards then backwards, so that drift (growing
 * tables, autovacuum, a busy neighbour) spreads over all of them instead of favouring one; the
 * ratios compare scenarios of this very run, never figures of another machine or day.
 */
async function main(): Promise<void> {
  const options = benchOptions(process.argv.slice(2), process.env);
  const demoNodeVersion = nodeVersion(options.demoNode);
  const started = Date.now();
  // Before PostgreSQL starts, so that it runs beside the load generator, not beside the demo.
  const pinning = pinCpus();
  let database: BenchDatabase | undefined;
  const demos = new Map<DemoVariant, DemoProcess>();
  let demo: DemoProcess | undefined;
  try {
    database = await openBenchDatabase(process.env);
    const runId = randomUUID().slice(0, 8);
    const redis = options.redisUrl !== undefined;
    const all = scenarios(runId, redis);
    // Every variant's process is up before the first round; only one is under load at a time.
    for (const variant of new Set(all.map((scenario) => scenario.variant))) {
      demos.set(
        variant,
        await DemoProcess.start(
          database.url,
          pinning?.demoCpu,
          options.demoNode,
          false,
          variantEnvironment(variant, options.redisUrl),
        ),
      );
    }
    demo = demos.get('default');
    if (!demo) throw new Error('no scenario runs on the default demo');
    console.log(header(options, database.description, pinning, demoNodeVersion));
    await completeReplayKeys(demo, runId, redis);

    const runs = await measure(demos, database, all, options);
    const figures = benchFigures(all, runs);
    console.log(`\n${formatFigures(figures)}`);
    console.log(
      `load average at the end: ${loadAverage()} (other work on the machine lowers req/s, not round trips)`,
    );
    const roundTrips = await probeRoundTrips(
      options.demoNode,
      pinning?.demoCpu,
      database.url,
      options.redisUrl,
      options.smoke ? ROUND_TRIP_PROBE_OPERATIONS.smoke : ROUND_TRIP_PROBE_OPERATIONS.full,
    );
    console.log(`\n${formatRoundTripCosts(roundTrips)}`);
    const probeProblems = roundTripProblems(roundTrips, options.redisUrl !== undefined);

    // The slow-key probe needs fault injection, which the measured demo must not pay for.
    for (const measured of demos.values()) await measured.stop();
    demos.clear();
    demo = await DemoProcess.start(database.url, pinning?.demoCpu, options.demoNode, true);
    console.log(`\n${formatSlowKeyProbe(await probeSlowKey(demo, database.url))}`);

    const problems = [...invalidities(figures), ...probeProblems];
    if (problems.length > 0) {
      console.error(
        `\nINVALID RUN:\n- ${problems.join('\n- ')}\n--- demo log (tail) ---\n${demo.logs()}`,
      );
      process.exitCode = 1;
    } else if (options.smoke) {
      console.log('\nsmoke run: every figure was produced (a short run does not judge the ratios)');
    }
  } finally {
    for (const measured of demos.values()) await measured.stop();
    await demo?.stop();
    await database?.close();
    console.log(`done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }
}

/** Operations of each kind the round-trip probe measures (after as many to warm up). */
const ROUND_TRIP_PROBE_OPERATIONS = { full: 20_000, smoke: 1_000 } as const;

/** A warm-up run of each scenario (JIT, pool, caches), then the measured rounds. */
async function measure(
  demos: ReadonlyMap<DemoVariant, DemoProcess>,
  database: BenchDatabase,
  all: readonly Scenario[],
  options: BenchOptions,
): Promise<Map<ScenarioId, ScenarioRun[]>> {
  const demoOf = (scenario: Scenario): DemoProcess => {
    const demo = demos.get(scenario.variant);
    if (!demo) throw new Error(`no demo process for the ${scenario.variant} variant`);
    return demo;
  };
  // When each process last served load: one that idled long has lost optimised code (`rewarm`).
  const lastLoaded = new Map<DemoProcess, number>();
  for (const scenario of all) {
    await warmUp(demoOf(scenario), database, scenario, options);
    lastLoaded.set(demoOf(scenario), Date.now());
  }
  const runs = new Map<ScenarioId, ScenarioRun[]>(all.map((scenario) => [scenario.id, []]));
  for (let round = 1; round <= options.rounds; round++) {
    const order = round % 2 === 1 ? all : [...all].reverse();
    const line: string[] = [];
    for (const scenario of order) {
      const demo = demoOf(scenario);
      // A twin idles between its runs; the default process only while the twins run, which
      // at the turn of a round is two of their blocks.
      if (scenario.variant !== 'default' || idledTooLong(lastLoaded.get(demo)))
        await rewarm(demo, database, scenario, options);
      const run = await runScenario(demo, database, scenario, `r${round}`, {
        connections: options.connections,
        durationSeconds: options.durationSeconds,
      });
      lastLoaded.set(demo, Date.now());
      runs.get(scenario.id)?.push(run);
      line.push(`${scenario.id} ${(run.latenciesMs.length / run.seconds).toFixed(0)}`);
    }
    console.log(`round ${round}/${options.rounds}, req/s: ${line.join(', ')}`);
  }
  return runs;
}

function header(
  options: BenchOptions,
  databaseDescription: string,
  pinning: CpuPinning | undefined,
  demoNodeVersion: string,
): string {
  const cpu = cpus();
  const { rounds, durationSeconds, warmupSeconds, rewarmSeconds, connections } = options;
  return [
    `nestjs-pg-idempotency benchmark${options.smoke ? ' (smoke run)' : ''}`,
    `machine: ${cpu.length} cores (${cpu[0]?.model.trim() ?? 'unknown CPU'}), ` +
      `the demo on Node ${demoNodeVersion}, the load generator on Node ${process.version}, ` +
      databaseDescription,
    pinning
      ? `CPUs: the demo processes on CPU ${pinning.demoCpu}; autocannon and PostgreSQL on CPU ${pinning.otherCpus}`
      : 'CPUs: not pinned (no taskset, or one CPU)',
    `load average at the start: ${loadAverage()}`,
    `peer: @node-idempotency/nestjs ${packageVersion('@node-idempotency/nestjs')} in memory` +
      (options.redisUrl
        ? ` and on Redis (${options.redisUrl})`
        : ' (on Redis too with --redis=URL or BENCH_REDIS_URL)'),
    `load: autocannon ${packageVersion('autocannon')}, ${connections} connections, pipelining 1; ` +
      `${rounds} round(s) of ${durationSeconds} s per scenario, after ${warmupSeconds} s of warm-up each; ` +
      `a run on a process that idled (a twin, every time) after ${rewarmSeconds} s of unmeasured load`,
    '',
  ].join('\n');
}

/** The 1-minute load average: how busy the machine was besides the benchmark. */
function loadAverage(): string {
  return loadavg()[0].toFixed(2);
}

function packageVersion(name: string): string {
  return (
    JSON.parse(readFileSync(require.resolve(`${name}/package.json`), 'utf8')) as {
      version: string;
    }
  ).version;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
