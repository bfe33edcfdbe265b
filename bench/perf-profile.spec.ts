import {
  byLibraryFunction,
  byOwner,
  byPart,
  formatGroups,
  formatTopDifferences,
  ownerOf,
  parsePerfScript,
  partOf,
  requestProfile,
} from './perf-profile';
import { profileOptions } from './profile-options';

// The shape of `perf script -F ip,sym` of a `perf record -g`: a blank line between samples,
// the innermost frame first, kernel addresses in the upper half.
const LIB = '/w/dist/apps/payments-api/libs/idempotency/src/http';
const sample = (...frames: string[]) =>
  frames.map((frame, index) => `\t${(0x1000 + index).toString(16)} ${frame}`).join('\n');
const kernel = (name: string) => `\tffffffff8170d256 ${name}`;
const WRITE_FOR_PG = [
  kernel('pvm_irq_enable'),
  '\t7f00 __GI___libc_write',
  sample(
    'JS:*writeGeneric node:internal/stream_base_commons:147:22',
    'JS:*_send /w/node_modules/pg/lib/connection.js:170:8',
    `JS:*commit ${LIB}/atomic/batched-transaction.js:159:9`,
  ),
].join('\n');
const SCAVENGE_FOR_LIBRARY = sample(
  'v8::internal::Scavenger::ScavengeObject<v8::internal::FullHeapObjectSlot>',
  'Builtins_CEntry',
  `JS:*captureResponse ${LIB}/stored-response.js:22:1`,
);
const EVENT_LOOP = [kernel('do_epoll_wait'), '\t108cae epoll_pwait'].join('\n');
const CORE_ALONE = sample('Builtins_LoadIC', 'JS:*end node:_http_outgoing:1034:45');
const samples = (...stacks: string[]) => `\n${stacks.join('\n\n\n')}\n\n`;
// 10 samples: 4 kernel writes for pg, 3 scavenges for the library, 2 polls, 1 in Node's core.
const CREATE_SCRIPT = samples(
  ...Array<string>(4).fill(WRITE_FOR_PG),
  ...Array<string>(3).fill(SCAVENGE_FOR_LIBRARY),
  ...Array<string>(2).fill(EVENT_LOOP),
  CORE_ALONE,
);
// 5 samples: 4 kernel writes for pg, 1 in Node's core.
const PLAIN_SCRIPT = samples(...Array<string>(4).fill(WRITE_FOR_PG), CORE_ALONE);

describe('perf profile of a scenario', () => {
  it('reads one stack per sample, innermost frame first, kernel frames marked', () => {
    const stacks = parsePerfScript(samples(WRITE_FOR_PG, EVENT_LOOP));
    expect(stacks).toHaveLength(2);
    expect(stacks[0]).toEqual([
      '[k] pvm_irq_enable',
      '__GI___libc_write',
      'JS:*writeGeneric node:internal/stream_base_commons:147:22',
      'JS:*_send /w/node_modules/pg/lib/connection.js:170:8',
      `JS:*commit ${LIB}/atomic/batched-transaction.js:159:9`,
    ]);
    expect(stacks[1]).toEqual(['[k] do_epoll_wait', 'epoll_pwait']);
  });

  it('turns samples into microseconds per request: a sample is one period of the CPU clock', () => {
    // 1,000 Hz: a sample is 1 ms; 10 samples over 100 requests are 100 µs each.
    const profile = requestProfile(parsePerfScript(CREATE_SCRIPT), 1000, 100);
    expect(byPart(profile).get('all')).toBeCloseTo(100);
    expect(profile.bySymbol.get('[k] pvm_irq_enable')).toBeCloseTo(40);
    expect(() => requestProfile([], 1000, 0)).toThrow('at least one request');
  });

  it("gives each sample to the JavaScript it ran for, outside Node's core", () => {
    const owners = byOwner(requestProfile(parsePerfScript(CREATE_SCRIPT), 1000, 100));
    expect(owners.get('pg')).toBeCloseTo(40);
    expect(owners.get('library')).toBeCloseTo(30);
    expect(owners.get('Node.js core alone')).toBeCloseTo(10);
    const library = byLibraryFunction(requestProfile(parsePerfScript(CREATE_SCRIPT), 1000, 100));
    expect([...library]).toEqual([
      ['captureResponse (http/stored-response.js)', expect.closeTo(30) as number],
      ['all', expect.closeTo(30) as number],
    ]);
    expect(owners.get('no JavaScript: kernel (system calls, wake-ups, interrupts)')).toBeCloseTo(
      20,
    );
    expect(
      ownerOf(['[k] x', 'JS:*f /w/dist/apps/payments-api/apps/payments-api/src/a.js:1:1']),
    ).toBe('demo');
  });

  it('puts each symbol in the part of the request it belongs to', () => {
    expect(partOf('[k] pvm_irq_enable')).toMatch(/^kernel/);
    expect(partOf('[.] v8::internal::Scavenger::ScavengeObject<x>')).toBe('V8 garbage collector');
    expect(partOf('[.] Builtins_KeyedLoadIC_Megamorphic')).toMatch(/^V8 property access/);
    expect(partOf('[.] Builtins_CompileLazy')).toMatch(/^V8 compilation/);
    expect(partOf('[.] Builtins_FulfillPromise')).toMatch(/^V8 promises/);
    expect(partOf('[.] v8::internal::JsonParser<unsigned char>::ParseJsonValue<false>')).toMatch(
      /JSON/,
    );
    expect(partOf('[.] JS:*proceed /x/dist/apps/payments-api/libs/idempotency/src/a.js:1:1')).toBe(
      'JS library',
    );
    expect(partOf('[.] JS:*f /x/node_modules/nestjs-pg-idempotency/dist/a.js:1:1')).toBe(
      'JS library',
    );
    expect(partOf('[.] JS:*create /x/dist/apps/payments-api/apps/payments-api/src/o.js:1:1')).toBe(
      'JS demo',
    );
    expect(partOf('[.] JS:*handle /x/node_modules/@nestjs/core/router/r.js:1:1')).toBe(
      'JS @nestjs/core',
    );
    expect(partOf('[.] JS:*parse /x/node_modules/pg-protocol/dist/parser.js:1:1')).toBe(
      'JS pg-protocol',
    );
    expect(partOf('[.] JS:*end node:_http_outgoing:1034:45')).toBe('JS Node.js core');
    expect(partOf('[.] node::StreamBase::CallJSOnreadMethod')).toBe('Node.js and libuv (C++)');
    expect(partOf('node::(anonymous namespace)::Parser::Execute')).toBe('Node.js and libuv (C++)');
    expect(partOf('llhttp_execute')).toBe('Node.js and libuv (C++)');
    expect(partOf('[.] __memmove_avx512_unaligned_erms')).toMatch(/^libc/);
  });

  it("prints the groups per scenario and the first one's excess over the second", () => {
    const create = requestProfile(parsePerfScript(CREATE_SCRIPT), 1000, 100);
    const plain = requestProfile(parsePerfScript(PLAIN_SCRIPT), 1000, 100);
    const table = formatGroups('part', [
      { id: 'a', groups: byPart(create) },
      { id: 'b', groups: byPart(plain) },
    ]).split('\n');
    expect(table[0]).toBe('| part | (a) µs / request | (b) µs / request | (a) − (b) |');
    expect(table[1]).toBe('| --- | --- | --- | --- |');
    expect(table[2]).toBe('| all | 100.0 | 50.0 | +50.0 |');
    // The largest excess first: the scavenges' 30 µs, then the kernel's 60 against 40.
    expect(table[3]).toBe('| V8 garbage collector | 30.0 | 0.0 | +30.0 |');
    expect(table[4]).toBe('| kernel (system calls, wake-ups, interrupts) | 60.0 | 40.0 | +20.0 |');
    const top = formatTopDifferences(create, plain, 2).split('\n');
    expect(top).toEqual([
      '  +30.0 µs  v8::internal::Scavenger::ScavengeObject<v8::internal::FullHeapObjectSlot>',
      '  +20.0 µs  [k] do_epoll_wait',
    ]);
  });

  it('takes the scenarios to profile and checks every argument', () => {
    expect(profileOptions(['--scenarios=a,b'], {}, '/usr/bin/node')).toEqual({
      scenarios: ['a', 'b'],
      seconds: 8,
      frequencyHz: 999,
      connections: 32,
      demoNode: '/usr/bin/node',
    });
    expect(
      profileOptions(['--scenarios=c', '--seconds=2.5', '--node=/opt/node'], {}, 'x'),
    ).toMatchObject({ scenarios: ['c'], seconds: 2.5, demoNode: '/opt/node' });
    expect(profileOptions(['--scenarios=c'], { BENCH_NODE: '/n24' }, 'x').demoNode).toBe('/n24');
    expect(profileOptions(['--scenarios=a,j', '--allocations'], {}, 'x').allocations).toBe(true);
    expect(profileOptions(['--scenarios=a,j'], {}, 'x').allocations).toBeUndefined();
    expect(() => profileOptions([], {})).toThrow('--scenarios is required');
    expect(() => profileOptions(['--scenarios=a,z'], {})).toThrow('unknown scenario "z"');
    expect(() => profileOptions(['--scenarios=a', '--seconds=0'], {})).toThrow('positive');
    expect(() => profileOptions(['--rounds=2'], {})).toThrow('unknown argument');
  });
});
