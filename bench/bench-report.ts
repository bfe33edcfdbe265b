import type { ScenarioRun } from './run-scenario';
import { expectedStatuses, type Scenario, type ScenarioId } from './scenarios';

/** One scenario over all its measured runs. */
export interface ScenarioFigures {
  id: ScenarioId;
  title: string;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  roundTripsPerRequest: number;
  /** CPU milliseconds per request, of the demo process and of PostgreSQL (NaN: not measured). */
  appCpuMsPerRequest: number;
  /** Of the demo's CPU per request: in the kernel, and in the garbage collector's pauses. */
  appSystemCpuMsPerRequest: number;
  gcMsPerRequest: number;
  postgresCpuMsPerRequest: number;
  responses: number;
  statusCounts: Map<number, number>;
  errors: number;
}

export interface BenchFigures {
  scenarios: ScenarioFigures[];
  /** Create over baseline, and replay over baseline, both in req/s of this very run. */
  createRatio: number;
  replayRatio: number;
  targets: TargetCheck[];
  /** Where each target's measure goes: Nest's charge for an interceptor, and the library's. */
  shares: Share[];
}

/**
 * A part of a target's measure, paired by round like the targets: what Nest charges for the
 * interceptor `@Idempotent()` is, or what the library costs above that charge; or the library
 * against the peer's, in app CPU.
 */
export interface Share {
  name: string;
  measure: string;
  value: number;
  unit: string;
  perRound: number[];
}

/** One target of the performance issue, with the value this run measured. */
export interface TargetCheck {
  name: string;
  /** How the value is computed, e.g. `app CPU (c) / (g)`. */
  measure: string;
  value: number;
  limit: number;
  unit: string;
  met: boolean;
  /**
   * The value of each round, from that round's runs alone; `value` is their median. Empty for a
   * figure that does not vary with the machine's load (round trips), whose value is the whole run's.
   */
  perRound: number[];
}

/**
 * The targets, all from this run: a cached replay costs at most 1.2 times the app CPU of the bare
 * route (both do no I/O); a create at most 0.15 ms of app CPU above the same handler without
 * idempotency; a replay from the database one round trip; and a create and a replay at least as
 * fast as the peer library's (req/s of the peer over ours at most 1), on Redis when it ran.
 */
export const TARGETS = {
  cachedReplayOverBare: 1.2,
  createAppCpuOverPlainMs: 0.15,
  databaseReplayRoundTrips: 1,
  peerOverOurs: 1,
} as const;

/**
 * Aggregates over the rounds: req/s is all responses over all measured seconds, and p50/p99 are
 * taken over every single latency of the scenario (percentiles of rounds cannot be averaged).
 */
export function benchFigures(
  scenarios: readonly Scenario[],
  runs: Map<ScenarioId, ScenarioRun[]>,
): BenchFigures {
  const figures = scenarios.map((scenario): ScenarioFigures => {
    const own = runs.get(scenario.id) ?? [];
    const latencies = Float64Array.from(own.flatMap((run) => run.latenciesMs)).sort();
    const statusCounts = new Map<number, number>();
    for (const run of own) {
      for (const [status, count] of run.statusCounts)
        statusCounts.set(status, (statusCounts.get(status) ?? 0) + count);
    }
    const seconds = sum(own.map((run) => run.seconds));
    const serverRequests = sum(own.map((run) => run.serverRequests));
    const postgresCpu = own.every((run) => run.postgresCpuMs !== undefined)
      ? sum(own.map((run) => run.postgresCpuMs ?? 0))
      : Number.NaN;
    return {
      id: scenario.id,
      title: scenario.title,
      requestsPerSecond: latencies.length / seconds,
      p50Ms: percentile(latencies, 0.5),
      p99Ms: percentile(latencies, 0.99),
      roundTripsPerRequest: sum(own.map((run) => run.roundTrips)) / serverRequests,
      appCpuMsPerRequest: sum(own.map((run) => run.appCpuMs)) / serverRequests,
      appSystemCpuMsPerRequest: sum(own.map((run) => run.appSystemCpuMs)) / serverRequests,
      gcMsPerRequest: sum(own.map((run) => run.gcMs)) / serverRequests,
      postgresCpuMsPerRequest: postgresCpu / serverRequests,
      responses: latencies.length,
      statusCounts,
      errors: sum(own.map((run) => run.errors)),
    };
  });
  const rps = (id: ScenarioId) =>
    figures.find((figure) => figure.id === id)?.requestsPerSecond ?? Number.NaN;
  return {
    scenarios: figures,
    createRatio: rps('a') / rps('b'),
    replayRatio: rps('c') / rps('b'),
    targets: targetChecks(figures, runs),
    shares: shares(runs),
  };
}

/**
 * Nest's charge for an interceptor, from the routes that have one doing nothing else ((j) around
 * the plain handler, (k) answering the bare route), and the library's share above it. Then the
 * library's app CPU over the peer's, for those of the peer's scenarios that ran.
 */
function shares(runs: Map<ScenarioId, ScenarioRun[]>): Share[] {
  const parts: [string, Combination, ScenarioId, ScenarioId][] = [
    ["Nest's charge for an interceptor around the handler", DIFFERENCE, 'j', 'b'],
    ["the library's own share of a create", DIFFERENCE, 'a', 'j'],
    ["Nest's charge for an interceptor that answers", RATIO, 'k', 'g'],
    ["the library's own share of a cached replay", RATIO, 'c', 'k'],
    // Against the peer library on the same handler: above 1, this library costs more.
    ['a create against the peer in memory', RATIO, 'a', 'l'],
    ['a create against the peer on Redis', RATIO, 'a', 'n'],
    ['a cached replay against the peer in memory', RATIO, 'c', 'm'],
    ['a cached replay against the peer on Redis', RATIO, 'c', 'o'],
  ];
  return parts.flatMap(([name, { combine, operator, unit }, x, y]) => {
    const perRound = pairedByRound(runs, combine, x, y);
    const measure = `app CPU (${x}) ${operator} (${y})`;
    return perRound.length > 0 ? [{ name, measure, value: median(perRound), unit, perRound }] : [];
  });
}

/** How two scenarios' app CPU per request are set against each other, and how it is printed. */
interface Combination {
  combine: (x: number, y: number) => number;
  operator: '-' | '/';
  unit: string;
}

const DIFFERENCE: Combination = { combine: (x, y) => x - y, operator: '-', unit: ' ms' };
const RATIO: Combination = { combine: (x, y) => x / y, operator: '/', unit: 'x' };

/**
 * `combine` of two scenarios' app CPU per request, round by round: the two runs of one round are
 * seconds apart, so a slow spell of the machine (seen here: one round's req/s at half the next
 * one's) moves both and leaves their difference or ratio be. Empty when either did not run.
 */
function pairedByRound(
  runs: Map<ScenarioId, ScenarioRun[]>,
  combine: (x: number, y: number) => number,
  x: ScenarioId,
  y: ScenarioId,
  metric: (run: ScenarioRun) => number = appCpuPerRequest,
): number[] {
  const xs = runs.get(x) ?? [];
  const ys = runs.get(y) ?? [];
  return xs
    .slice(0, Math.min(xs.length, ys.length))
    .map((run, round) => combine(metric(run), metric(ys[round])));
}

function targetChecks(
  figures: readonly ScenarioFigures[],
  runs: Map<ScenarioId, ScenarioRun[]>,
): TargetCheck[] {
  const of = (id: ScenarioId) => figures.find((figure) => figure.id === id);
  const check = (
    name: string,
    measure: string,
    perRound: number[],
    value: number,
    limit: number,
    unit: string,
  ): TargetCheck => ({ name, measure, value, limit, unit, met: value <= limit, perRound });
  const replayOverBare = pairedByRound(runs, RATIO.combine, 'c', 'g');
  const createOverPlain = pairedByRound(runs, DIFFERENCE.combine, 'a', 'b');
  return [
    check(
      'a cached replay over the bare route',
      'app CPU (c) / (g), median of the rounds',
      replayOverBare,
      median(replayOverBare),
      TARGETS.cachedReplayOverBare,
      'x',
    ),
    check(
      'a create over the same handler without idempotency',
      'app CPU (a) - (b), median of the rounds',
      createOverPlain,
      median(createOverPlain),
      TARGETS.createAppCpuOverPlainMs,
      ' ms',
    ),
    check(
      'a replay from the database',
      'round trips (h)',
      [],
      of('h')?.roundTripsPerRequest ?? Number.NaN,
      TARGETS.databaseReplayRoundTrips,
      '',
    ),
    ...peerTargets(runs).map(({ name, measure, perRound }) =>
      check(name, measure, perRound, median(perRound), TARGETS.peerOverOurs, 'x'),
    ),
  ];
}

/**
 * Against the peer library, `@node-idempotency/nestjs`, on the same handler and process: its
 * req/s over ours, round by round, for a create and a cached replay; on Redis when (n) and (o)
 * ran, else in memory.
 */
function peerTargets(
  runs: Map<ScenarioId, ScenarioRun[]>,
): { name: string; measure: string; perRound: number[] }[] {
  const onRedis = (runs.get('n')?.length ?? 0) > 0 && (runs.get('o')?.length ?? 0) > 0;
  const [create, replay, where]: [ScenarioId, ScenarioId, string] = onRedis
    ? ['n', 'o', 'on Redis']
    : ['l', 'm', 'in memory'];
  return (
    [
      [`a create at least as fast as the peer's ${where}`, create, 'a'],
      [`a cached replay at least as fast as the peer's ${where}`, replay, 'c'],
    ] as const
  ).flatMap(([name, peer, ours]) => {
    const perRound = pairedByRound(runs, RATIO.combine, peer, ours, requestsPerSecond);
    const measure = `req/s (${peer}) / (${ours}), median of the rounds`;
    return perRound.length > 0 ? [{ name, measure, perRound }] : [];
  });
}

/** App CPU per request of a run, in milliseconds. */
export function appCpuPerRequest(run: ScenarioRun): number {
  return run.appCpuMs / run.serverRequests;
}

/** Responses per second of a run. */
export function requestsPerSecond(run: ScenarioRun): number {
  return run.latenciesMs.length / run.seconds;
}

/** Why the run's figures cannot be trusted, if they cannot; empty when they can. */
export function invalidities(figures: BenchFigures): string[] {
  const problems: string[] = [];
  for (const scenario of figures.scenarios) {
    const numbers = {
      'req/s': scenario.requestsPerSecond,
      p50: scenario.p50Ms,
      p99: scenario.p99Ms,
      'app CPU/request': scenario.appCpuMsPerRequest,
    };
    for (const [name, value] of Object.entries(numbers)) {
      if (!Number.isFinite(value) || value <= 0)
        problems.push(`(${scenario.id}) ${name} is ${value}`);
    }
    // Zero is possible in a short run: no collection, or no system call the clock's tick saw.
    const parts = {
      'kernel CPU/request': scenario.appSystemCpuMsPerRequest,
      'GC/request': scenario.gcMsPerRequest,
    };
    for (const [name, value] of Object.entries(parts)) {
      if (!Number.isFinite(value) || value < 0)
        problems.push(`(${scenario.id}) ${name} is ${value}`);
    }
    // Zero is a real figure here: replays from the replay cache send no query.
    const roundTrips = scenario.roundTripsPerRequest;
    if (!Number.isFinite(roundTrips) || roundTrips < 0)
      problems.push(`(${scenario.id}) round trips/request is ${roundTrips}`);
    const allowed = expectedStatuses(scenario.id);
    for (const [status, count] of scenario.statusCounts) {
      if (!allowed.includes(status))
        problems.push(`(${scenario.id}) ${count} responses with status ${status}`);
    }
    if (scenario.errors > 0)
      problems.push(`(${scenario.id}) ${scenario.errors} requests without a response`);
  }
  if (!Number.isFinite(figures.createRatio) || figures.createRatio <= 0)
    problems.push(`a/b is ${figures.createRatio}`);
  if (!Number.isFinite(figures.replayRatio) || figures.replayRatio <= 0)
    problems.push(`c/b is ${figures.replayRatio}`);
  return problems;
}

export function formatFigures(figures: BenchFigures): string {
  const header = [
    '',
    'scenario',
    'req/s',
    'p50 ms',
    'p99 ms',
    'round trips/req',
    'app CPU ms/req',
    'of it kernel',
    'of it GC',
    'PG CPU ms/req',
    'responses',
    'non-2xx',
    'no response',
  ];
  const rows = figures.scenarios.map((scenario) => [
    `(${scenario.id})`,
    scenario.title,
    scenario.requestsPerSecond.toFixed(0),
    scenario.p50Ms.toFixed(1),
    scenario.p99Ms.toFixed(1),
    scenario.roundTripsPerRequest.toFixed(2),
    scenario.appCpuMsPerRequest.toFixed(2),
    scenario.appSystemCpuMsPerRequest.toFixed(2),
    scenario.gcMsPerRequest.toFixed(2),
    Number.isNaN(scenario.postgresCpuMsPerRequest)
      ? 'n/a'
      : scenario.postgresCpuMsPerRequest.toFixed(2),
    String(scenario.responses),
    describeNon2xx(scenario.statusCounts),
    String(scenario.errors),
  ]);
  const widths = header.map((_, column) =>
    Math.max(...[header, ...rows].map((row) => row[column].length)),
  );
  const line = (row: string[]) =>
    row
      .map((cell, column) =>
        column <= 1 ? cell.padEnd(widths[column]) : cell.padStart(widths[column]),
      )
      .join('  ');
  return [
    line(header),
    ...rows.map(line),
    '',
    `req/s: a/b = ${figures.createRatio.toFixed(2)} (create over the plain handler), ` +
      `c/b = ${figures.replayRatio.toFixed(2)} (cached replay over the plain handler)`,
    ...cpuRatios(figures.scenarios),
    ...postgresPerCreate(figures.scenarios),
    ...settingCosts(figures.scenarios),
    '',
    'where the targets go (Nest charges any interceptor; the rest is the library), and the peer:',
    ...figures.shares.map(
      (share) =>
        `  ${share.name}: ${share.measure} = ${formatTarget(share.value, share.unit)}` +
        (share.perRound.length > 1
          ? `; by round: ${share.perRound.map((value) => formatTarget(value, share.unit)).join(', ')}`
          : ''),
    ),
    '',
    'targets:',
    ...figures.targets.map(
      (target) =>
        `  ${target.name}: ${target.measure} = ${formatTarget(target.value, target.unit)} ` +
        `(target <= ${formatTarget(target.limit, target.unit)}: ${target.met ? 'met' : 'NOT MET'})` +
        (target.perRound.length > 1
          ? `; by round: ${target.perRound.map((value) => formatTarget(value, target.unit)).join(', ')}`
          : ''),
    ),
  ].join('\n');
}

/**
 * What one setting costs a create, between twin processes that differ in that setting alone:
 * sealed records are (e) over (i), the write guard is (i) over (f).
 */
function settingCosts(scenarios: readonly ScenarioFigures[]): string[] {
  const find = (id: ScenarioId) => scenarios.find((scenario) => scenario.id === id);
  const i = find('i');
  const e = find('e');
  const f = find('f');
  const cost = (name: string, on?: ScenarioFigures, off?: ScenarioFigures) => {
    if (!on || !off) return [];
    const pg = on.postgresCpuMsPerRequest - off.postgresCpuMsPerRequest;
    return [
      `${name}: ${signed(on.appCpuMsPerRequest - off.appCpuMsPerRequest)} ms app CPU, ` +
        `${Number.isNaN(pg) ? 'n/a' : signed(pg)} ms PostgreSQL CPU, ` +
        `${signed(on.roundTripsPerRequest - off.roundTripsPerRequest)} round trips per create ` +
        `(req/s ${(on.requestsPerSecond / off.requestsPerSecond).toFixed(2)}x)`,
    ];
  };
  return [...cost('sealed records cost (e - i)', e, i), ...cost('write guard costs (i - f)', i, f)];
}

/** PostgreSQL's CPU per create, and what the key row adds to the plain handler's. */
function postgresPerCreate(scenarios: readonly ScenarioFigures[]): string[] {
  const a = scenarios.find((scenario) => scenario.id === 'a');
  const b = scenarios.find((scenario) => scenario.id === 'b');
  if (!a || !b || Number.isNaN(a.postgresCpuMsPerRequest)) return [];
  return [
    `PostgreSQL CPU per create: ${a.postgresCpuMsPerRequest.toFixed(3)} ms, of which the key ` +
      `row ${signed(a.postgresCpuMsPerRequest - b.postgresCpuMsPerRequest)} ms over the plain handler`,
  ];
}

function formatTarget(value: number, unit: string): string {
  return `${value.toFixed(unit === ' ms' ? 3 : 2)}${unit}`;
}

function signed(value: number): string {
  return `${value >= 0 ? '+' : ''}${value.toFixed(3)}`;
}

/**
 * The same ratios from server CPU per request (demo + PostgreSQL): what req/s tends to when the
 * server is CPU-bound, and far less sensitive than req/s to other work on the machine.
 */
function cpuRatios(scenarios: readonly ScenarioFigures[]): string[] {
  const cpu = (id: ScenarioId) => {
    const scenario = scenarios.find((candidate) => candidate.id === id);
    return scenario ? scenario.appCpuMsPerRequest + scenario.postgresCpuMsPerRequest : Number.NaN;
  };
  const create = cpu('b') / cpu('a');
  const replay = cpu('b') / cpu('c');
  if (!Number.isFinite(create) || !Number.isFinite(replay)) return [];
  return [
    `by server CPU per request (demo + PostgreSQL): a/b = ${create.toFixed(2)}, c/b = ${replay.toFixed(2)}`,
  ];
}

function describeNon2xx(statusCounts: Map<number, number>): string {
  const non2xx = [...statusCounts].filter(([status]) => status < 200 || status > 299);
  if (non2xx.length === 0) return '0';
  return non2xx.map(([status, count]) => `${count} x ${status}`).join(', ');
}

function percentile(sorted: Float64Array, fraction: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)];
}

/** The middle value, or the mean of the two middle ones; NaN for none. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((x, y) => x - y);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

function sum(values: number[]): number {
  return values.reduce((total, value) => total + value, 0);
}
