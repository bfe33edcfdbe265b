import fc from 'fast-check';
import { canonicalJson, requestFingerprint } from './fingerprint';

/** JSON text of `value` with its object keys shuffled and random whitespace between tokens. */
function reformat(value: unknown, shuffle: (keys: string[]) => string[], pad: () => string): string {
  if (Array.isArray(value)) {
    return `[${pad()}${value.map((v) => reformat(v, shuffle, pad)).join(`${pad()},${pad()}`)}${pad()}]`;
  }
  if (value !== null && typeof value === 'object') {
    const entries = shuffle(Object.keys(value)).map(
      (k) => `${pad()}${JSON.stringify(k)}${pad()}:${pad()}${reformat((value as Record<string, unknown>)[k], shuffle, pad)}`,
    );
    return `{${entries.join(',')}${pad()}}`;
  }
  return JSON.stringify(value);
}

const jsonValue = fc.jsonValue({ maxDepth: 4 });
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
          expect(requestFingerprint({ ...base, body: changed })).not.toBe(requestFingerprint({ ...base, body }));
        },
      ),
    );
  });

  it('changes when a field is added or removed', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), jsonValue), fc.string(), jsonValue, (body, key, value) => {
        fc.pre(!(key in body));
        expect(requestFingerprint({ ...base, body: { ...body, [key]: value } })).not.toBe(
          requestFingerprint({ ...base, body }),
        );
      }),
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
    expect(requestFingerprint({ ...base, body: undefined })).toBe(requestFingerprint({ ...base, body: null }));
    expect(requestFingerprint({ ...base, body: {} })).toMatch(/^[0-9a-f]{64}$/);
  });

  it('is RFC 8785 canonical JSON', () => {
    expect(canonicalJson({ b: [1, 2.5, 1e21], a: 'é', c: { z: null, y: true } })).toBe(
      '{"a":"é","b":[1,2.5,1e+21],"c":{"y":true,"z":null}}',
    );
  });
});
