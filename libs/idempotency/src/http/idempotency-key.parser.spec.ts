import fc from 'fast-check';
import { IdempotencyRejection } from './idempotency.errors';
import { parseIdempotencyKey } from './idempotency-key.parser';

const parse = (raw: string | string[] | undefined) =>
  parseIdempotencyKey(raw, 'Idempotency-Key', 255);
const printable = fc.stringMatching(/^[\x21-\x7e][\x20-\x7e]{0,200}[\x21-\x7e]$/);

/** RFC 8941 serialisation of a string: quotes and backslashes escaped. */
const quote = (key: string) => `"${key.replace(/[\\"]/g, (c) => `\\${c}`)}"`;

describe('parseIdempotencyKey', () => {
  it('returns undefined for an absent header', () => {
    expect(parse(undefined)).toBeUndefined();
  });

  it('reads the bare and the structured-field (quoted) forms as the same key', () => {
    fc.assert(
      fc.property(printable, (key) => {
        fc.pre(!key.startsWith('"') && !key.includes(','));
        expect(parse(key)).toBe(key);
        expect(parse(quote(key))).toBe(key);
      }),
    );
  });

  it.each([
    ['', 'empty'],
    ['   ', 'blank'],
    ['k'.repeat(256), 'too long'],
    ['"k"x', 'text after the closing quote'],
    ['"abc', 'unterminated'],
    ['"a\\nb"', 'bad escape'],
    ['clé', 'non-ASCII'],
    ['a\u0007b', 'control character'],
    // String#trim would strip them, and the key would be `key`: another key, merged.
    ['key\u00a0', 'a trailing no-break space (a 0xA0 byte)'],
    ['\u00a0key', 'a leading no-break space'],
    ['key\u2003', 'a trailing em space'],
  ])('rejects %j (%s) with a 400 problem', (raw) => {
    expect(() => parse(raw)).toThrow(IdempotencyRejection);
    try {
      parse(raw);
    } catch (error) {
      expect((error as IdempotencyRejection).status).toBe(400);
    }
  });

  it('rejects a header sent twice', () => {
    expect(() => parse(['a', 'b'])).toThrow(IdempotencyRejection);
  });

  it('rejects a header sent twice as Node delivers it, joined into one value, in both forms', () => {
    expect(() => parse('k1, k1')).toThrow(/must appear once/);
    expect(() => parse('"k1", "k1"')).toThrow(IdempotencyRejection);
    expect(parse('"k1, k1"')).toBe('k1, k1'); // a comma in a key: quoted, it is one key
  });

  it('accepts exactly the configured length', () => {
    expect(parse('k'.repeat(255))).toHaveLength(255);
    expect(() => parseIdempotencyKey('k'.repeat(11), 'Idempotency-Key', 10)).toThrow(
      IdempotencyRejection,
    );
  });
});
