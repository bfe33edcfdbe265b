import { benchOptions } from './bench-options';

describe('benchmark options', () => {
  const OWN_NODE = '/usr/bin/node';

  it('runs the demo on the benchmark’s own Node.js unless told otherwise', () => {
    expect(benchOptions([], {}, OWN_NODE)).toEqual({
      rounds: 5,
      durationSeconds: 5,
      warmupSeconds: 3,
      rewarmSeconds: 10,
      connections: 32,
      smoke: false,
      demoNode: OWN_NODE,
      redisUrl: undefined,
    });
  });

  it('compares with the peer on Redis only when given one, by --redis or BENCH_REDIS_URL', () => {
    const url = 'redis://127.0.0.1:6379';
    expect(benchOptions([], { BENCH_REDIS_URL: url }, OWN_NODE).redisUrl).toBe(url);
    expect(
      benchOptions(['--redis=redis://other:6379'], { BENCH_REDIS_URL: url }, OWN_NODE).redisUrl,
    ).toBe('redis://other:6379');
    expect(benchOptions([], { BENCH_REDIS_URL: '' }, OWN_NODE).redisUrl).toBeUndefined();
    expect(() => benchOptions(['--redis'], {}, OWN_NODE)).toThrow('--redis needs a URL');
  });

  it('takes the demo’s Node.js from BENCH_NODE, and from --node over it', () => {
    expect(benchOptions([], { BENCH_NODE: '/opt/node24/bin/node' }, OWN_NODE).demoNode).toBe(
      '/opt/node24/bin/node',
    );
    expect(
      benchOptions(
        ['--node=/opt/node22/bin/node'],
        { BENCH_NODE: '/opt/node24/bin/node' },
        OWN_NODE,
      ).demoNode,
    ).toBe('/opt/node22/bin/node');
  });

  it('lets arguments win over the environment, and refuses what it does not know', () => {
    const options = benchOptions(['--smoke', '--rounds=3'], { BENCH_ROUNDS: '7' }, OWN_NODE);
    expect(options).toMatchObject({ smoke: true, rounds: 3, durationSeconds: 2 });
    expect(() => benchOptions(['--speed=9'], {}, OWN_NODE)).toThrow('unknown argument "--speed=9"');
    expect(() => benchOptions(['--rounds=0'], {}, OWN_NODE)).toThrow(
      'rounds must be a positive integer, got "0"',
    );
  });
});
