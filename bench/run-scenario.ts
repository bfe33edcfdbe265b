import autocannon from 'autocannon';
import type { BenchDatabase } from './bench-database';
import type { DemoProcess } from './demo-process';
import { type Scenario, TENANT_KEYS } from './scenarios';

/** What one run of one scenario measured. */
export interface ScenarioRun {
  seconds: number;
  /** Latency of every completed response, in milliseconds. */
  latenciesMs: number[];
  statusCounts: Map<number, number>;
  /** Connection errors and timeouts: requests that got no response at all. */
  errors: number;
  /** Queries the demo sent to PostgreSQL (round trips: a batch of statements is one), and requests it received, during the run. */
  roundTrips: number;
  serverRequests: number;
  /** CPU the demo process used during the run, and PostgreSQL (undefined: not measured). */
  appCpuMs: number;
  /** Of `appCpuMs`, the kernel's part, and the garbage collector's pauses (main thread). */
  appSystemCpuMs: number;
  gcMs: number;
  postgresCpuMs?: number;
}

export interface RunSettings {
  connections: number;
  /** How long to run; ignored when `amount` is given. */
  durationSeconds: number;
  /** Run exactly this many requests instead, however long they take. */
  amount?: number;
}

/**
 * Drives one scenario for `durationSeconds` with autocannon, pipelining 1, and reads the demo's
 * counters before and after, once no request is left running. The CPU figures say what a
 * request costs the server whatever else the machine is doing; req/s says how many it managed.
 */
export async function runScenario(
  demo: DemoProcess,
  database: BenchDatabase,
  scenario: Scenario,
  run: string,
  settings: RunSettings,
): Promise<ScenarioRun> {
  const before = await demo.settledStats(TENANT_KEYS[0]);
  const postgresCpuBefore = database.cpuMilliseconds();
  const latenciesMs: number[] = [];
  const statusCounts = new Map<number, number>();
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: demo.url,
        connections: settings.connections,
        pipelining: 1,
        ...(settings.amount === undefined
          ? { duration: settings.durationSeconds }
          : { amount: settings.amount }),
        timeout: 10,
        requests: [scenario.request(run)],
      },
      (error, done) => (error ? reject(error) : resolve(done)),
    );
    instance.on('response', (_client, statusCode, _bytes, responseTime) => {
      latenciesMs.push(responseTime);
      statusCounts.set(statusCode, (statusCounts.get(statusCode) ?? 0) + 1);
    });
  });
  const after = await demo.settledStats(TENANT_KEYS[0]);
  const postgresCpuAfter = database.cpuMilliseconds();
  const measured = postgresCpuBefore !== undefined && postgresCpuAfter !== undefined;
  return {
    seconds: result.duration,
    latenciesMs,
    statusCounts,
    errors: result.errors,
    roundTrips: after.roundTrips - before.roundTrips,
    serverRequests: after.requests - before.requests,
    appCpuMs: (after.cpuMicroseconds - before.cpuMicroseconds) / 1000,
    appSystemCpuMs: (after.systemCpuMicroseconds - before.systemCpuMicroseconds) / 1000,
    gcMs: (after.gcMicroseconds - before.gcMicroseconds) / 1000,
    postgresCpuMs: measured ? postgresCpuAfter - postgresCpuBefore : undefined,
  };
}

/**
 * Runs a scenario unmeasured before its measured runs: a fixed number of requests first,
 * however long they take (a process that never served one still opens its pool, every
 * connection authenticating, and compiles its code, which a short timed warm-up on a busy CPU
 * may not see through), then `warmupSeconds` of load.
 */
export async function warmUp(
  demo: DemoProcess,
  database: BenchDatabase,
  scenario: Scenario,
  settings: { connections: number; warmupSeconds: number },
): Promise<void> {
  const { connections, warmupSeconds } = settings;
  await runScenario(demo, database, scenario, 'warmup', {
    connections,
    durationSeconds: warmupSeconds,
    amount: connections * 4,
  });
  await runScenario(demo, database, scenario, 'warmup', {
    connections,
    durationSeconds: warmupSeconds,
  });
}

/**
 * Runs a scenario unmeasured right before a measured run on a process that idled: a twin, every
 * time, since it idles while the other scenarios run. Once a process's allocations stop, V8's
 * full collections free the object shapes that only its requests used, and the optimised code
 * built on them is thrown away. The first seconds of load after such a spell cost a create about
 * three times its CPU (measured in docs/benchmark.md), which is the re-optimising, not the
 * request.
 */
export async function rewarm(
  demo: DemoProcess,
  database: BenchDatabase,
  scenario: Scenario,
  settings: { connections: number; rewarmSeconds: number },
): Promise<void> {
  await runScenario(demo, database, scenario, 'rewarm', {
    connections: settings.connections,
    durationSeconds: settings.rewarmSeconds,
  });
}

/**
 * Idle spells of up to 25 s left a demo's CPU per create inside the machine's spread, and one of
 * a minute tripled it (docs/benchmark.md): a process idle for this long is re-warmed.
 */
export const REWARM_AFTER_IDLE_MS = 20_000;

/** Whether a process that last served load at `lastLoaded` (epoch ms) needs `rewarm` now. */
export function idledTooLong(lastLoaded: number | undefined, now: number = Date.now()): boolean {
  return lastLoaded === undefined || now - lastLoaded >= REWARM_AFTER_IDLE_MS;
}
