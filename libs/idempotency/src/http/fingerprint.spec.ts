import fc from 'fast-check';
import {
  canonicalJson,
  MAX_BODY_DEPTH,
  MAX_VERBATIM_CHARS,
  requestFingerprint,
  verbatimRequest,
} from './fingerprint';
import { IdempotencyProblemType, IdempotencyRejection } from './idempotency.errors';

/** JSON text of `value` with its object keys shuffled and random whitespace between tokens. */
function reformat(
  value: unknown,
  shuffle: (keys: string[]) => string[],
  pad: () => string,
): string {
  if (Array.isArray(value)) {
    return `[${pad()}${value.map((v) => reformat(v, shuffle, pad)).join(`${pad()},${pad()}`)}${pad()}]`;
  }
  if (value !== null && typeof value === 'object') {
    const entries = shuffle(Object.keys(value)).map(
      (k) =>
        `${pad()}${JSON.stringify(k)}${pad()}:${pad()}${reformat((value as Record<string, unknown>)[k], shuffle, pad)}`,
    );
    return `{${entries.join(',')}${pad()}}`;
  }
  return JSON.stringify(value);
}

const jsonValue = fc.jsonValue({ maxDepth: 4, stringUnit: 'binary' });
const base = { method: 'POST', route: '/v1/orders', params: {}, query: {} };

describe('requestFingerprint', () => {
  it('hashes any permutation of fields and any whitespace the same', () => {
    fc.assert(
      fc.property(
        jsonValue,
        fc.infiniteStream(fc.nat()),
        fc.array(fc.constantFrom('', ' ', '\n', '\t', '\r\n  ')),
        (value, seeds, spaces) => {
          let i = 0;
          const shuffle = (keys: string[]) =>
            keys
              .map((k) => ({ k, r: seeds.next().value as number }))
              .sort((a, b) => a.r - b.r)
              .map(({ k }) => k);
          const pad = () => (spaces.length ? spaces[i++ % spaces.length] : '');
          const text = reformat(value, shuffle, pad);
          expect(requestFingerprint({ ...base, body: JSON.parse(text) })).toBe(
            requestFingerprint({ ...base, body: value }),
          );
        },
      ),
    );
  });

  it('changes when any value changes', () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string(), jsonValue, { minKeys: 1 }),
        fc.nat(),
        jsonValue,
        (body, pick, replacement) => {
          const keys = Object.keys(body);
          const key = keys[pick % keys.length];
          fc.pre(canonicalJson(body[key]) !== canonicalJson(replacement));
          const changed = { ...body, [key]: replacement };
          expect(requestFingerprint({ ...base, body: changed })).not.toBe(
            requestFingerprint({ ...base, body }),
          );
        },
      ),
    );
  });

  it('changes when a field is added or removed', () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string(), jsonValue),
        fc.string(),
        jsonValue,
        (body, key, value) => {
          fc.pre(!(key in body));
          expect(requestFingerprint({ ...base, body: { ...body, [key]: value } })).not.toBe(
            requestFingerprint({ ...base, body }),
          );
        },
      ),
    );
  });

  it('treats numbers by value: 700, 700.0 and 7e2 are one number', () => {
    const hash = (text: string) => requestFingerprint({ ...base, body: JSON.parse(text) });
    expect(hash('{"n":700}')).toBe(hash('{"n":700.0}'));
    expect(hash('{"n":700}')).toBe(hash('{"n":7e2}'));
    expect(hash('{"n":700}')).not.toBe(hash('{"n":"700"}'));
  });

  it('includes the method, route, path parameters and query', () => {
    const fingerprint = requestFingerprint({ ...base, body: {} });
    expect(requestFingerprint({ ...base, method: 'PUT', body: {} })).not.toBe(fingerprint);
    expect(requestFingerprint({ ...base, route: '/v1/other', body: {} })).not.toBe(fingerprint);
    expect(requestFingerprint({ ...base, params: { id: '1' }, body: {} })).not.toBe(fingerprint);
    expect(requestFingerprint({ ...base, query: { page: '2' }, body: {} })).not.toBe(fingerprint);
    expect(requestFingerprint({ ...base, query: { a: '1', b: '2' }, body: {} })).toBe(
      requestFingerprint({ ...base, query: { b: '2', a: '1' }, body: {} }),
    );
  });

  it('gives no body and a null body one hash, and is a SHA-256 hex digest', () => {
    expect(requestFingerprint({ ...base, body: undefined })).toBe(
      requestFingerprint({ ...base, body: null }),
    );
    expect(requestFingerprint({ ...base, body: {} })).toMatch(/^[0-9a-f]{64}$/);
  });

  it('is RFC 8785 canonical JSON', () => {
    expect(canonicalJson({ b: [1, 2.5, 1e21], a: 'é', c: { z: null, y: true } })).toBe(
      '{"a":"é","b":[1,2.5,1e+21],"c":{"y":true,"z":null}}',
    );
  });
});

/** The rejection `run` throws; anything else it throws fails the test. */
function rejectionOf(run: () => unknown): IdempotencyRejection {
  try {
    run();
  } catch (error) {
    if (error instanceof IdempotencyRejection) return error;
    throw error;
  }
  throw new Error('expected an IdempotencyRejection, got a fingerprint');
}

/** `leaf` inside `depth` containers, built without recursion; `kind(i)` picks array or object. */
function nested(
  depth: number,
  leaf: unknown = 1,
  kind: (level: number) => 'array' | 'object' = () => 'array',
): unknown {
  let value = leaf;
  for (let level = 0; level < depth; level++)
    value = kind(level) === 'array' ? [value] : { k: value };
  return value;
}

/** An object whose own keys are `entries`, `__proto__` included, as JSON.parse makes it. */
function objectOf(entries: [string, unknown][]): Record<string, unknown> {
  const object: Record<string, unknown> = {};
  for (const [key, value] of entries)
    Object.defineProperty(object, key, {
      value,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  return object;
}

/** Objects with an own `__proto__` key, beside other keys that name Object.prototype's members. */
const protoObject = fc
  .tuple(
    jsonValue,
    fc.uniqueArray(
      fc.tuple(fc.constantFrom('constructor', 'toString', 'hasOwnProperty', 'a', 'b'), jsonValue),
      { selector: ([key]) => key },
    ),
  )
  .map(([proto, entries]) => objectOf([['__proto__', proto], ...entries]));

describe('requestFingerprint of stored rows', () => {
  // Rows written by earlier versions hold these hashes: a change here turns their honest
  // retries into 422s. Computed with canonicalize 2.1.0 before the depth bound existed.
  it.each([
    [
      'an order',
      { ...base, body: { customerId: 'cus-1', amountCents: 4999, currency: 'usd' } },
      '10c78ad93c8ce2de86b2373c63bf4ac2200475a9fbe4969f8877ea3544beaa07',
    ],
    [
      'an order with a reference',
      {
        ...base,
        body: { reference: 'ref-Ω-1', customerId: 'cus-1', amountCents: 1200, currency: 'eur' },
      },
      '3184ed78f3e77b18d32666339642dac6873435b2b0ee7229468ba46da9be7bd9',
    ],
    [
      'a null body',
      { ...base, body: null },
      'cbc7bfc55707f64ce025f42cbc20e75021b5f47e3f224ab4a9a43aeeab3742d8',
    ],
    [
      'numbers, parameters and a query',
      {
        ...base,
        method: 'put',
        route: '/v1/things/:id',
        params: { id: '42' },
        query: { page: '2', tags: ['a', 'b'] },
        body: { n: [0, -0, 1e21, 1e-7, 0.1, -2.5, 9007199254740992, 5e-324] }, // 2^53 + 1 parses as 2^53
      },
      'fc06192992959315a93aa458f46250794e80b97cee9bb6799b012cab12f7414d',
    ],
    [
      'strings and key order',
      {
        ...base,
        body: {
          s: 'é\u2028\u0000"\\\ud83d\ude00',
          lone: '\ud800',
          key: { b: 1, a: 2, '': 3, é: 4, Z: 5 },
        },
      },
      '43526e82e363b700193b3abcbbcbb1e3f9bb3ebadd4e429e82d040f1d03ba7de',
    ],
    [
      'nesting and headers',
      {
        ...base,
        body: [[[{ deep: [true, false, null, {}] }]]],
        headers: { 'x-tenant': 'acme', 'x-absent': undefined },
      },
      '63eb32b4ef78e9b45fd0e57f188434b6a17e5244a510acd284c6d292ab764edc',
    ],
    [
      'a __proto__ key',
      { ...base, body: JSON.parse('{"a":1,"__proto__":{"x":1}}') },
      '4dfa7839b96b23a970d4dbe79536f6af131c2882dca458d88bad799cc92e35cd',
    ],
  ])('is unchanged for %s', (_case, input, hash) => {
    expect(requestFingerprint(input)).toBe(hash);
  });
});

describe('requestFingerprint of bodies it cannot fingerprint', () => {
  const fingerprintOf = (text: string) => () =>
    requestFingerprint({ ...base, body: JSON.parse(text) });

  it.each([
    ['a number that overflows to Infinity', '{"customerId":"c","amountCents":1e400}'],
    ['one that overflows to -Infinity', '{"customerId":"c","amountCents":[1,{"n":-1e400}]}'],
    [
      '100,000 nested arrays',
      `{"customerId":"c","amountCents":${'['.repeat(100_000)}${']'.repeat(100_000)}}`,
    ],
    [
      '50,000 nested objects',
      `{"customerId":"c","amountCents":${'{"a":'.repeat(50_000)}1${'}'.repeat(50_000)}}`,
    ],
  ])('rejects %s with a 400 problem of its own', (_case, text) => {
    const rejection = rejectionOf(fingerprintOf(text));
    expect(rejection.problem).toMatchObject({
      type: IdempotencyProblemType.unfingerprintableRequest,
      status: 400,
    });
    expect(rejection.reason).toBe('unfingerprintable_request');
  });

  it('rejects NaN and infinities wherever they are: body, query or parameters', () => {
    for (const bad of [NaN, Infinity, -Infinity]) {
      rejectionOf(() => requestFingerprint({ ...base, body: bad }));
      rejectionOf(() => requestFingerprint({ ...base, body: { a: [{ b: bad }] } }));
      rejectionOf(() => requestFingerprint({ ...base, query: { page: bad }, body: {} }));
      rejectionOf(() => requestFingerprint({ ...base, params: { id: bad }, body: {} }));
      rejectionOf(() => canonicalJson({ a: bad }));
    }
  });

  it(`accepts ${MAX_BODY_DEPTH} levels of nesting and rejects one more, in any mix of arrays and objects`, () => {
    for (const kind of [
      () => 'array' as const,
      () => 'object' as const,
      (level: number) => (level % 2 ? 'array' : 'object'),
    ] as const) {
      expect(requestFingerprint({ ...base, body: nested(MAX_BODY_DEPTH, 'leaf', kind) })).toMatch(
        /^[0-9a-f]{64}$/,
      );
      // An empty container is a level too.
      expect(requestFingerprint({ ...base, body: nested(MAX_BODY_DEPTH - 1, {}, kind) })).toMatch(
        /^[0-9a-f]{64}$/,
      );
      rejectionOf(() => requestFingerprint({ ...base, body: nested(MAX_BODY_DEPTH, [], kind) }));
      rejectionOf(() => requestFingerprint({ ...base, body: nested(MAX_BODY_DEPTH + 1, 1, kind) }));
      expect(canonicalJson(nested(MAX_BODY_DEPTH, 1, kind))).toBe(
        JSON.stringify(nested(MAX_BODY_DEPTH, 1, kind)),
      );
      rejectionOf(() => canonicalJson(nested(MAX_BODY_DEPTH + 1, 1, kind)));
    }
    rejectionOf(() => requestFingerprint({ ...base, query: nested(MAX_BODY_DEPTH + 1), body: {} }));
  });

  it('never throws anything but its own rejection, and rejects exactly the deep and the non-finite', () => {
    // A level's kind is a bit of a random word: cheap enough for 100,000 levels.
    const kind = fc
      .nat()
      .map(
        (bits) => (level: number) =>
          (bits >>> (level % 31)) & 1 ? ('array' as const) : ('object' as const),
      );
    const depth = fc.oneof(
      { arbitrary: fc.integer({ min: 0, max: 2 * MAX_BODY_DEPTH }), weight: 9 },
      { arbitrary: fc.constant(100_000), weight: 1 },
    );
    const deep = fc.tuple(depth, jsonValue, kind).map(([depth, leaf, pick]) => ({
      body: nested(depth, leaf, pick),
      depth: depth + depthOf(leaf),
      finite: true,
    }));
    const nonFinite = fc
      .tuple(
        fc.integer({ min: 0, max: 8 }),
        fc.constantFrom(NaN, Infinity, -Infinity),
        jsonValue,
        kind,
      )
      .map(([depth, bad, sibling, pick]) => ({
        body: { sibling, bad: nested(depth, bad, pick) },
        depth: Infinity,
        finite: false,
      }));
    const plain = fc
      .oneof(fc.jsonValue({ stringUnit: 'binary' }), protoObject)
      .map((body) => ({ body, depth: depthOf(body), finite: true }));
    fc.assert(
      fc.property(fc.oneof(plain, deep, nonFinite), ({ body, depth, finite }) => {
        if (finite && depth <= MAX_BODY_DEPTH) {
          expect(requestFingerprint({ ...base, body })).toMatch(/^[0-9a-f]{64}$/);
        } else {
          expect(rejectionOf(() => requestFingerprint({ ...base, body })).problem.type).toBe(
            IdempotencyProblemType.unfingerprintableRequest,
          );
        }
      }),
      { numRuns: 300 },
    );
  });
});

/** Containers around the deepest leaf of a JSON value (a test oracle; recursive, test values only). */
function depthOf(value: unknown): number {
  if (value === null || typeof value !== 'object') return 0;
  const children = Array.isArray(value) ? value : Object.values(value);
  return 1 + children.reduce<number>((max, child) => Math.max(max, depthOf(child)), 0);
}

describe('requestFingerprint of unusual but valid bodies', () => {
  const hash = (body: unknown) => requestFingerprint({ ...base, body });

  it('keeps lone surrogates apart: escaped as \\uXXXX, neither merged nor replaced by U+FFFD', () => {
    expect(canonicalJson({ s: '\ud800' })).toBe('{"s":"\\ud800"}');
    const hashes = ['\ud800', '\udbff', '\udc00', '\ufffd', '', '\ud800\udc00'].map((s) =>
      hash({ s }),
    );
    expect(new Set(hashes).size).toBe(hashes.length);
    expect(hash(JSON.parse('{"s":"\\ud800"}'))).toBe(hash({ s: '\ud800' }));
  });

  it('treats -0 as 0, as RFC 8785 does', () => {
    expect(canonicalJson([-0, 0])).toBe('[0,0]');
    expect(hash(JSON.parse('{"n":-0}'))).toBe(hash({ n: 0 }));
    expect(hash(JSON.parse('{"n":-0.0}'))).toBe(hash({ n: 0 }));
  });

  it('fingerprints a __proto__ key as an ordinary key, in any key order, and pollutes nothing', () => {
    const withProto = JSON.parse('{"a":1,"__proto__":{"polluted":true,"a":2}}');
    const reordered = JSON.parse('{"__proto__":{"a":2,"polluted":true},"a":1}');
    expect(hash(withProto)).toBe(hash(reordered));
    expect(hash(withProto)).not.toBe(hash({ a: 1 }));
    expect(hash(withProto)).not.toBe(hash(JSON.parse('{"a":1,"__proto__":{"polluted":true}}')));
    expect(canonicalJson(withProto)).toBe('{"__proto__":{"a":2,"polluted":true},"a":1}');
    expect(Object.getPrototypeOf(withProto)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('hashes objects with __proto__, constructor and toString keys the same in any key order', () => {
    fc.assert(
      fc.property(protoObject, fc.infiniteStream(fc.nat()), (body, seeds) => {
        const shuffle = (keys: string[]) =>
          keys
            .map((k) => ({ k, r: seeds.next().value as number }))
            .sort((a, b) => a.r - b.r)
            .map(({ k }) => k);
        const reordered = JSON.parse(reformat(body, shuffle, () => ''));
        expect(Object.keys(reordered).sort()).toEqual(Object.keys(body).sort());
        expect(hash(reordered)).toBe(hash(body));
        expect(
          hash(objectOf(Object.entries(body).filter(([key]) => key !== '__proto__'))),
        ).not.toBe(hash(body));
        expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      }),
    );
  });

  it('follows toJSON as canonicalize does (a Date of a DTO), and ends on one that returns itself', () => {
    expect(canonicalJson({ at: new Date(0), n: { toJSON: () => [1] } })).toBe(
      '{"at":"1970-01-01T00:00:00.000Z","n":[1]}',
    );
    const loop: { toJSON(): unknown } = { toJSON: () => loop };
    rejectionOf(() => canonicalJson({ loop }));
    rejectionOf(() => canonicalJson({ n: { toJSON: () => NaN } }));
  });

  it('fingerprints a 10 MB string, in time linear in its length', () => {
    const tenMb = 'é"\u2028x'.repeat(2.5 * 1024 * 1024);
    const started = performance.now();
    const fingerprint = hash({ note: tenMb });
    const tookMs = performance.now() - started;
    expect(fingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect(hash({ note: `${tenMb.slice(0, -1)}y` })).not.toBe(fingerprint);
    // Generous for a shared CI machine; a quadratic path would take minutes.
    expect(tookMs).toBeLessThan(5_000);
  });
});

describe('verbatimRequest', () => {
  it('gives two parses of the same text one verbatim text, and then one fingerprint', () => {
    fc.assert(
      fc.property(jsonValue, (value) => {
        const text = JSON.stringify(value);
        const first = { ...base, body: JSON.parse(text) as unknown };
        const retry = { ...base, body: JSON.parse(text) as unknown };
        const verbatim = verbatimRequest(first);
        if (verbatim === undefined) return; // too long for the shortcut: nothing to check
        expect(verbatimRequest(retry)).toBe(verbatim);
        expect(requestFingerprint(retry)).toBe(requestFingerprint(first));
      }),
    );
  });

  it('tells apart what the fingerprint tells apart: another key order, a value, the route', () => {
    const verbatim = verbatimRequest({ ...base, body: { a: 1, b: 2 } });
    expect(verbatimRequest({ ...base, body: { b: 2, a: 1 } })).not.toBe(verbatim);
    expect(verbatimRequest({ ...base, body: { a: 1, b: 3 } })).not.toBe(verbatim);
    expect(verbatimRequest({ ...base, route: '/v1/other', body: { a: 1, b: 2 } })).not.toBe(
      verbatim,
    );
  });

  it('gives up past MAX_VERBATIM_CHARS and where JSON.stringify does: the fingerprint decides then', () => {
    expect(verbatimRequest({ ...base, body: 'x'.repeat(MAX_VERBATIM_CHARS) })).toBeUndefined();
    expect(verbatimRequest({ ...base, body: 'x'.repeat(100) })).toEqual(expect.any(String));
    // Deeper than JSON.stringify's stack: a RangeError inside, none outside.
    let deep: unknown = [];
    for (let level = 0; level < 200_000; level++) deep = [deep];
    expect(verbatimRequest({ ...base, body: deep })).toBeUndefined();
  });
});

/**
 * What GraphQL variables can hold and a JSON body cannot: a custom scalar's value. The GraphQL
 * path fingerprints them with `canonicalJson`.
 */
describe('canonicalJson of values only a GraphQL scalar gives', () => {
  it.each([
    ['an upload scalar’s promise', { file: Promise.resolve({ filename: 'a.pdf' }) }],
    ['a thenable', { file: { then: () => undefined } }],
  ])('rejects %s with the 400 rejection: its content would not count', (_case, variables) => {
    const rejection = rejectionOf(() => canonicalJson({ variables }));
    expect(rejection.reason).toBe('unfingerprintable_request');
  });

  it('fingerprints a Set by its values and a Map by its entries, where JSON would give {}', () => {
    expect(canonicalJson({ tags: new Set(['a', 'b']) })).toBe('{"tags":["a","b"]}');
    expect(canonicalJson({ tags: new Set(['a', 'c']) })).not.toBe(
      canonicalJson({ tags: new Set(['a', 'b']) }),
    );
    expect(
      canonicalJson({
        limits: new Map<string, unknown>([
          ['eur', 5n],
          ['usd', { n: 1 }],
        ]),
      }),
    ).toBe('{"limits":[["eur","5"],["usd",{"n":1}]]}');
  });

  it('holds a Set and a Map to the depth bound, their contents a level (a pair two) below', () => {
    let nested: unknown = 1;
    for (let level = 0; level < MAX_BODY_DEPTH; level++) nested = new Set([nested]);
    expect(rejectionOf(() => canonicalJson({ nested })).reason).toBe('unfingerprintable_request');
    expect(() => canonicalJson(new Map([['k', new Set([1])]]))).not.toThrow();
  });

  it('fingerprints a BigInt by its value, wherever it is', () => {
    const text = canonicalJson({ amount: 12345678901234567890n, legs: [{ cents: -5n }] });
    expect(text).toBe('{"amount":"12345678901234567890","legs":[{"cents":"-5"}]}');
    expect(canonicalJson({ amount: 12345678901234567891n })).not.toBe(
      canonicalJson({ amount: 12345678901234567890n }),
    );
    // The copy keeps a __proto__ key as an own key, and follows toJSON as canonicalize does.
    const withProto = JSON.parse('{"__proto__": {"n": 1}}') as Record<string, unknown>;
    expect(canonicalJson({ b: 1n, withProto, at: new Date(0) })).toBe(
      '{"at":"1970-01-01T00:00:00.000Z","b":"1","withProto":{"__proto__":{"n":1}}}',
    );
  });
});
