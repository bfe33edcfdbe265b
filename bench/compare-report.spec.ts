import { formatComparison } from './compare-report';

describe('bench:compare report', () => {
  it('prints each build’s medians and the candidate’s CPU over the baseline’s, round by round', () => {
    const report = formatComparison([
      {
        id: 'c',
        title: 'replays of one completed key',
        baseline: [
          { cpuMs: 0.15, requestsPerSecond: 6000 },
          { cpuMs: 0.16, requestsPerSecond: 5800 },
          { cpuMs: 0.2, requestsPerSecond: 5000 },
          { cpuMs: 0.18, requestsPerSecond: 5400 },
        ],
        candidate: [
          { cpuMs: 0.12, requestsPerSecond: 7000 },
          { cpuMs: 0.144, requestsPerSecond: 6900 },
          { cpuMs: 0.2, requestsPerSecond: 5100 },
          { cpuMs: 0.153, requestsPerSecond: 6600 },
        ],
      },
    ]);
    // Medians as npm run bench takes them: of an even count, the mean of the two middle values.
    expect(report).toBe(
      [
        '(c) replays of one completed key',
        '  app CPU / request: baseline 170.0 µs, candidate 148.5 µs; req/s: baseline 5600, candidate 6750',
        '  candidate / baseline, app CPU: 0.875 (rounds 0.800, 0.900, 1.000, 0.850)',
      ].join('\n'),
    );
  });

  it('refuses runs that do not pair up by round', () => {
    expect(() =>
      formatComparison([
        { id: 'g', title: 'bare', baseline: [{ cpuMs: 1, requestsPerSecond: 1 }], candidate: [] },
      ]),
    ).toThrow('(g): 1 baseline and 0 candidate runs');
  });
});
