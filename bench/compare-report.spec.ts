import { formatComparison, median } from './compare-report';

describe('bench:compare report', () => {
  it('takes the upper middle value as the median, as the benchmark does', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(3);
    expect(() => median([])).toThrow('no values');
  });

  it('prints each build’s medians and the candidate’s CPU over the baseline’s, round by round', () => {
    const report = formatComparison([
      {
        id: 'c',
        title: 'replays of one completed key',
        baseline: [
          { cpuMs: 0.15, requestsPerSecond: 6000 },
          { cpuMs: 0.16, requestsPerSecond: 5800 },
          { cpuMs: 0.2, requestsPerSecond: 5000 },
        ],
        candidate: [
          { cpuMs: 0.12, requestsPerSecond: 7000 },
          { cpuMs: 0.144, requestsPerSecond: 6900 },
          { cpuMs: 0.2, requestsPerSecond: 5100 },
        ],
      },
    ]);
    expect(report).toBe(
      [
        '(c) replays of one completed key',
        '  app CPU / request: baseline 160.0 µs, candidate 144.0 µs; req/s: baseline 5800, candidate 6900',
        '  candidate / baseline, app CPU: 0.900 (rounds 0.800, 0.900, 1.000)',
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
