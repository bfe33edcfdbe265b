import { benchFigures, formatFigures, invalidities } from './bench-report';
import type { ScenarioRun } from './run-scenario';
import { type ScenarioId, scenarios } from './scenarios';

/** The checks the smoke run relies on: a run is invalid when a figure is missing or wrong. */
describe('benchmark figures', () => {
  const all = scenarios('test', true);

  function run(overrides: Partial<ScenarioRun> = {}): ScenarioRun {
    return {
      seconds: 2,
      latenciesMs: [1, 2, 3, 4, 100],
      statusCounts: new Map([[201, 5]]),
      errors: 0,
      roundTrips: 30,
      serverRequests: 5,
      appCpuMs: 5,
      appSystemCpuMs: 1,
      gcMs: 0.5,
      postgresCpuMs: 2,
      ...overrides,
    };
  }

  function runs(overrides: Partial<Record<ScenarioId, Partial<ScenarioRun>>> = {}) {
    return new Map(all.map((scenario) => [scenario.id, [run(overrides[scenario.id])]]));
  }

  it('aggregates req/s, percentiles over every latency, round trips and ratios', () => {
    const figures = benchFigures(all, runs({ b: { latenciesMs: [1, 1, 1, 1, 1, 1, 1, 1, 1, 1] } }));
    const a = figures.scenarios.find((scenario) => scenario.id === 'a');
    expect(a).toMatchObject({
      requestsPerSecond: 2.5,
      p50Ms: 3,
      p99Ms: 100,
      roundTripsPerRequest: 6,
    });
    expect(figures.createRatio).toBeCloseTo(0.5);
    expect(figures.replayRatio).toBeCloseTo(0.5);
    expect(invalidities(figures)).toEqual([]);
  });

  it("reports the kernel's and the garbage collector's part of the app CPU, and refuses a negative one", () => {
    const figures = benchFigures(all, runs({ a: { appSystemCpuMs: 2, gcMs: 1.5 } }));
    expect(figures.scenarios.find((scenario) => scenario.id === 'a')).toMatchObject({
      appCpuMsPerRequest: 1,
      appSystemCpuMsPerRequest: 0.4,
      gcMsPerRequest: 0.3,
    });
    const table = formatFigures(figures);
    expect(table).toMatch(/app CPU ms\/req\s+of it kernel\s+of it GC\s+PG CPU ms\/req/);
    expect(table).toMatch(/\(a\).*\s1\.00\s+0\.40\s+0\.30\s+0\.40\s/);
    // No collection in a short run is a real figure; a negative one is a broken counter.
    expect(invalidities(benchFigures(all, runs({ a: { gcMs: 0, appSystemCpuMs: 0 } })))).toEqual(
      [],
    );
    expect(invalidities(benchFigures(all, runs({ a: { gcMs: -1 } })))).toEqual([
      '(a) GC/request is -0.2',
    ]);
  });

  it('accepts 409 in the contention scenario only', () => {
    const contention = {
      statusCounts: new Map([
        [201, 4],
        [409, 1],
      ]),
    };
    expect(invalidities(benchFigures(all, runs({ d: contention })))).toEqual([]);
    expect(invalidities(benchFigures(all, runs({ c: contention })))).toEqual([
      '(c) 1 responses with status 409',
    ]);
  });

  it('rejects a run with errors, a 5xx, or a scenario that produced no figures', () => {
    const problems = invalidities(
      benchFigures(
        all,
        runs({
          a: {
            statusCounts: new Map([
              [201, 4],
              [500, 1],
            ]),
          },
          b: { errors: 2 },
          c: { latenciesMs: [], serverRequests: 0, roundTrips: 0 },
        }),
      ),
    );
    expect(problems).toEqual(
      expect.arrayContaining([
        '(a) 1 responses with status 500',
        '(b) 2 requests without a response',
        '(c) req/s is 0',
        '(c) p50 is NaN',
        '(c) round trips/request is NaN',
        'c/b is 0',
      ]),
    );
  });

  it('takes the CPU targets round by round, pairing the runs of each round, and reports their median', () => {
    // Round 2 ran on a busy machine: every figure doubled. Paired, its ratio is the others'.
    const cpu = (perRequest: number[]) => perRequest.map((ms) => run({ appCpuMs: ms * 5 }));
    const rounds = new Map(all.map((scenario) => [scenario.id, cpu([0.3, 0.6, 0.3])]));
    rounds.set('a', cpu([1.0, 2.0, 1.1]));
    rounds.set('b', cpu([0.8, 1.6, 0.8]));
    rounds.set('c', cpu([0.33, 0.66, 0.36]));
    rounds.set('g', cpu([0.3, 0.6, 0.3]));
    const [replay, create, database] = benchFigures(all, rounds).targets;
    expect(replay.perRound.map((value) => Number(value.toFixed(2)))).toEqual([1.1, 1.1, 1.2]);
    expect(replay.value).toBeCloseTo(1.1);
    expect(replay.met).toBe(true);
    expect(create.perRound.map((value) => Number(value.toFixed(2)))).toEqual([0.2, 0.4, 0.3]);
    expect(create.value).toBeCloseTo(0.3);
    expect(create.met).toBe(false);
    // Not a figure of the machine's load: the whole run's count.
    expect(database.perRound).toEqual([]);
    expect(database.value).toBeCloseTo(6);
  });

  it("splits each CPU target into Nest's charge for an interceptor and the library's share, round by round", () => {
    const cpu = (perRequest: number[]) => perRequest.map((ms) => run({ appCpuMs: ms * 5 }));
    const rounds = new Map(all.map((scenario) => [scenario.id, cpu([0.3, 0.6, 0.3])]));
    rounds.set('a', cpu([1.0, 2.0, 1.1]));
    rounds.set('j', cpu([0.9, 1.8, 0.9]));
    rounds.set('b', cpu([0.8, 1.6, 0.8]));
    rounds.set('c', cpu([0.36, 0.72, 0.39]));
    rounds.set('k', cpu([0.33, 0.66, 0.33]));
    rounds.set('g', cpu([0.3, 0.6, 0.3]));
    const shares = benchFigures(all, rounds).shares;
    const byMeasure = new Map(shares.map((share) => [share.measure, share]));
    const rounded = (measure: string) =>
      byMeasure.get(measure)?.perRound.map((value) => Number(value.toFixed(2)));
    expect(rounded('app CPU (j) - (b)')).toEqual([0.1, 0.2, 0.1]);
    expect(byMeasure.get('app CPU (j) - (b)')?.value).toBeCloseTo(0.1);
    expect(rounded('app CPU (a) - (j)')).toEqual([0.1, 0.2, 0.2]);
    expect(rounded('app CPU (k) / (g)')).toEqual([1.1, 1.1, 1.1]);
    expect(rounded('app CPU (c) / (k)')).toEqual([1.09, 1.09, 1.18]);
    expect(byMeasure.get('app CPU (c) / (k)')?.value).toBeCloseTo(1.09);
    expect(formatFigures(benchFigures(all, rounds))).toContain(
      "Nest's charge for an interceptor around the handler: app CPU (j) - (b) = 0.100 ms",
    );
  });

  it("holds a create and a cached replay against the peer's req/s on Redis, round by round", () => {
    const perSecond = (counts: number[]) =>
      counts.map((count) => run({ latenciesMs: Array.from({ length: count }, () => 1) }));
    const rounds = new Map(all.map((scenario) => [scenario.id, perSecond([10, 20, 10])]));
    rounds.set('a', perSecond([10, 20, 10]));
    rounds.set('n', perSecond([12, 22, 11]));
    rounds.set('c', perSecond([30, 60, 30]));
    rounds.set('o', perSecond([27, 60, 24]));
    const [create, replay] = benchFigures(all, rounds).targets.slice(3);
    expect(create).toMatchObject({
      name: "a create at least as fast as the peer's on Redis",
      measure: 'req/s (n) / (a), median of the rounds',
      met: false,
    });
    expect(create.perRound.map((value) => Number(value.toFixed(2)))).toEqual([1.2, 1.1, 1.1]);
    expect(create.value).toBeCloseTo(1.1);
    expect(replay.value).toBeCloseTo(0.9);
    expect(replay.met).toBe(true);
  });

  it('holds them against the peer in memory when the Redis scenarios did not run', () => {
    const withoutRedis = scenarios('test', false);
    expect(withoutRedis.map((scenario) => scenario.id)).not.toContain('n');
    expect(withoutRedis.map((scenario) => scenario.id)).not.toContain('o');
    const figures = benchFigures(
      withoutRedis,
      new Map(withoutRedis.map((scenario) => [scenario.id, [run()]])),
    );
    expect(figures.targets.slice(3).map((target) => target.measure)).toEqual([
      'req/s (l) / (a), median of the rounds',
      'req/s (m) / (c), median of the rounds',
    ]);
    expect(figures.shares.map((share) => share.measure)).toEqual(
      expect.arrayContaining(['app CPU (a) / (l)', 'app CPU (c) / (m)']),
    );
    expect(figures.shares.map((share) => share.measure)).not.toContain('app CPU (a) / (n)');
  });
});
