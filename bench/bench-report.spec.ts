import { benchFigures, invalidities } from './bench-report';
import type { ScenarioRun } from './run-scenario';
import { type ScenarioId, scenarios } from './scenarios';

/** The checks the smoke run relies on: a run is invalid when a figure is missing or wrong. */
describe('benchmark figures', () => {
  const all = scenarios('test');

  function run(overrides: Partial<ScenarioRun> = {}): ScenarioRun {
    return {
      seconds: 2,
      latenciesMs: [1, 2, 3, 4, 100],
      statusCounts: new Map([[201, 5]]),
      errors: 0,
      roundTrips: 30,
      serverRequests: 5,
      appCpuMs: 5,
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
});
