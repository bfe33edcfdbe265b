import {
  byPart,
  formatParts,
  formatTopDifferences,
  parsePerfReport,
  partOf,
  requestProfile,
} from './perf-profile';
import { profileOptions } from './profile-options';

// The shape of `perf report --no-children --sort sym -q -F sample,sym`, as perf 6 prints it.
const CREATE_REPORT = `
     400  [k] pvm_irq_enable
     300  [.] v8::internal::Scavenger::ScavengeObject<v8::internal::FullHeapObjectSlot>
     200  [.] Builtins_KeyedLoadIC_Megamorphic
     100  [.] JS:*proceed /work/main/dist/apps/payments-api/libs/idempotency/src/http/idempotency.interceptor.js:162:18
     100  [.] JS:*parse /work/main/node_modules/pg-protocol/dist/parser.js:26:10
      50  [.] JS:*create /work/main/dist/apps/payments-api/apps/payments-api/src/orders/orders.controller.js:39:10
`;
const PLAIN_REPORT = `
     400  [k] pvm_irq_enable
     100  [.] v8::internal::Scavenger::ScavengeObject<v8::internal::FullHeapObjectSlot>
     100  [.] JS:*parse /work/main/node_modules/pg-protocol/dist/parser.js:26:10
`;

describe('perf profile of a scenario', () => {
  it('reads sample counts by symbol and skips other lines', () => {
    expect(parsePerfReport(`# header\n\n${PLAIN_REPORT}`)).toEqual([
      { samples: 400, symbol: '[k] pvm_irq_enable' },
      {
        samples: 100,
        symbol: '[.] v8::internal::Scavenger::ScavengeObject<v8::internal::FullHeapObjectSlot>',
      },
      {
        samples: 100,
        symbol: '[.] JS:*parse /work/main/node_modules/pg-protocol/dist/parser.js:26:10',
      },
    ]);
  });

  it('turns samples into microseconds per request: a sample is one period of the CPU clock', () => {
    // 1,000 Hz: a sample is 1 ms; 600 samples over 100 requests are 6 ms, 6,000 µs, each.
    const profile = requestProfile(parsePerfReport(PLAIN_REPORT), 1000, 100);
    expect(byPart(profile).get('all')).toBeCloseTo(6000);
    expect(profile.bySymbol.get('[k] pvm_irq_enable')).toBeCloseTo(4000);
    expect(() => requestProfile([], 1000, 0)).toThrow('at least one request');
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
    expect(partOf('[.] __memmove_avx512_unaligned_erms')).toMatch(/^libc/);
  });

  it("prints the parts per scenario and the first one's excess over the second", () => {
    const create = requestProfile(parsePerfReport(CREATE_REPORT), 1000, 100);
    const plain = requestProfile(parsePerfReport(PLAIN_REPORT), 1000, 100);
    const table = formatParts([
      { id: 'a', profile: create },
      { id: 'b', profile: plain },
    ]).split('\n');
    expect(table[0]).toBe('| part | (a) µs / request | (b) µs / request | (a) − (b) |');
    expect(table[2]).toBe('| all | 11500.0 | 6000.0 | +5500.0 |');
    // The largest excess first; the kernel's, equal in both, after every part that grew.
    expect(table[3]).toBe('| V8 garbage collector | 3000.0 | 1000.0 | +2000.0 |');
    expect(table.at(-1)).toMatch(/^\| kernel .* \| 4000\.0 \| 4000\.0 \| \+0\.0 \|$/);
    const top = formatTopDifferences(create, plain, 2).split('\n');
    expect(top).toEqual([
      `+2000.0 µs  [.] v8::internal::Scavenger::ScavengeObject<v8::internal::FullHeapObjectSlot>`,
      `+2000.0 µs  [.] Builtins_KeyedLoadIC_Megamorphic`,
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
    expect(() => profileOptions([], {})).toThrow('--scenarios is required');
    expect(() => profileOptions(['--scenarios=a,z'], {})).toThrow('unknown scenario "z"');
    expect(() => profileOptions(['--scenarios=a', '--seconds=0'], {})).toThrow('positive');
    expect(() => profileOptions(['--rounds=2'], {})).toThrow('unknown argument');
  });
});
