import { resolve } from 'node:path';
import { compareOptions, DEMO_ENTRY } from './compare-options';
import { REPO_ROOT } from './repo-paths';

describe('bench:compare options', () => {
  const OWN_NODE = '/usr/bin/node';
  const built = () => true;

  it('compares the cached replay and the bare route, 6 rounds of 5 s, unless told otherwise', () => {
    expect(compareOptions(['--baseline=dist-baseline'], {}, OWN_NODE, built)).toEqual({
      baselineMain: resolve(REPO_ROOT, 'dist-baseline', DEMO_ENTRY),
      scenarios: ['c', 'g'],
      variant: 'default',
      rounds: 6,
      durationSeconds: 5,
      warmupSeconds: 2,
      connections: 32,
      demoNode: OWN_NODE,
      redisUrl: undefined,
    });
  });

  it('needs a baseline with the demo built in it', () => {
    expect(() => compareOptions([], {}, OWN_NODE, built)).toThrow('--baseline=DIR is required');
    expect(() => compareOptions(['--baseline'], {}, OWN_NODE, built)).toThrow(
      '--baseline=DIR is required',
    );
    expect(() => compareOptions(['--baseline=nowhere'], {}, OWN_NODE, () => false)).toThrow(
      `${resolve(REPO_ROOT, 'nowhere', DEMO_ENTRY)} is missing`,
    );
  });

  it('takes the scenarios and the lengths it is given, all on one kind of demo process', () => {
    const options = compareOptions(
      ['--baseline=/tmp/base', '--scenarios=a,b,j', '--rounds=8', '--duration=2.5', '--warmup=1'],
      {},
      OWN_NODE,
      built,
    );
    expect(options).toMatchObject({
      baselineMain: resolve('/tmp/base', DEMO_ENTRY),
      scenarios: ['a', 'b', 'j'],
      rounds: 8,
      durationSeconds: 2.5,
      warmupSeconds: 1,
    });
    expect(() => compareOptions(['--baseline=b', '--scenarios=c,h'], {}, OWN_NODE, built)).toThrow(
      'scenarios c (default), h (uncached) run on demo processes with different settings',
    );
    expect(compareOptions(['--baseline=b', '--scenarios=h'], {}, OWN_NODE, built).variant).toBe(
      'uncached',
    );
    expect(() => compareOptions(['--baseline=b', '--scenarios=z'], {}, OWN_NODE, built)).toThrow(
      'unknown scenario "z"',
    );
    expect(() => compareOptions(['--baseline=b', '--rounds=1.5'], {}, OWN_NODE, built)).toThrow(
      '--rounds must be a positive integer',
    );
  });

  it('runs both demos on the Node.js of --node or BENCH_NODE, and the peer on --redis', () => {
    const options = compareOptions(
      ['--baseline=b', '--redis=redis://127.0.0.1:6379'],
      { BENCH_NODE: '/opt/node24/bin/node' },
      OWN_NODE,
      built,
    );
    expect(options.demoNode).toBe('/opt/node24/bin/node');
    expect(options.redisUrl).toBe('redis://127.0.0.1:6379');
  });
});
