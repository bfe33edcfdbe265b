import { formatInstructionReport, instructionsByThread } from './instruction-count';

describe('instruction counts of bench:instructions', () => {
  it('reads the instructions of each thread from callgrind_control -e Ir', () => {
    const output = [
      'PID 10020: node /w/dist/apps/payments-api/apps/payments-api/src/main.js',
      '',
      '  Totals:         Ir ',
      '   Th 1  484,796,382 ',
      '   Th 2        1,449 ',
      '   Th 3   89,730,992 ',
    ].join('\n');
    expect([...instructionsByThread(output)]).toEqual([
      [1, 484_796_382],
      [2, 1_449],
      [3, 89_730_992],
    ]);
  });

  it('refuses an output without the main thread', () => {
    expect(() => instructionsByThread('PID 1: node\n  Totals: Ir\n')).toThrow('main thread');
  });

  it('prints the pairs whose two scenarios were counted, ratio and difference', () => {
    const count = (id: string, main: number) => ({
      id,
      title: `scenario ${id}`,
      requests: 2000,
      mainPerRequest: main,
      allPerRequest: main * 1.2,
    });
    const report = formatInstructionReport([count('c', 903_000), count('g', 793_000)]);
    expect(report).toContain('| (c) | scenario c | 2000 | 903.0k | 1083.6k |');
    expect(report).toContain('- (c) / (g) 1.139, (c) − (g) +110.0k');
    expect(report).not.toContain('(c) / (k)');
  });
});
