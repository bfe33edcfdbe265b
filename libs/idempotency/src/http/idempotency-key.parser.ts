import { IdempotencyRejection } from './idempotency.errors';

const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

/**
 * Reads a key from the header value. The draft defines the header as a structured-field
 * string (`"abc"`); many clients send the bare token (`abc`). Both name the same key.
 * Returns `undefined` when the header is absent; throws a 400 rejection when malformed.
 */
export function parseIdempotencyKey(
  raw: string | string[] | undefined,
  headerName: string,
  maxLength: number,
): string | undefined {
  if (raw === undefined) return undefined;
  if (Array.isArray(raw)) {
    if (raw.length !== 1) throw IdempotencyRejection.malformedKey(headerName, 'must appear once');
    raw = raw[0];
  }
  // Checked before the trim: String#trim strips Unicode spaces too (U+00A0, which Node decodes
  // from a 0xA0 byte), and `key\xA0` would then be the key `key`. Past the check, only the
  // spaces around the value are left to strip.
  if (!PRINTABLE_ASCII.test(raw)) {
    throw IdempotencyRejection.malformedKey(headerName, 'must contain printable ASCII only');
  }
  const value = raw.trim();
  // Node joins a header sent twice into one value, `k1, k1`: in the bare form a comma can only
  // mean that. A key with a comma must be sent quoted.
  if (!value.startsWith('"') && value.includes(',')) {
    throw IdempotencyRejection.malformedKey(
      headerName,
      'must appear once (a key with a comma must be quoted)',
    );
  }
  const key = value.startsWith('"') ? unquoteStructuredString(value, headerName) : value;
  if (key.length === 0) throw IdempotencyRejection.malformedKey(headerName, 'must not be empty');
  if (key.length > maxLength) {
    throw IdempotencyRejection.malformedKey(headerName, `must be at most ${maxLength} characters`);
  }
  return key;
}

/** RFC 8941 sf-string: DQUOTE *( unescaped / "\" ( DQUOTE / "\" ) ) DQUOTE */
function unquoteStructuredString(value: string, headerName: string): string {
  let key = '';
  for (let i = 1; i < value.length; i++) {
    const char = value[i];
    if (char === '\\') {
      const next = value[++i];
      if (next !== '"' && next !== '\\') {
        throw IdempotencyRejection.malformedKey(
          headerName,
          'has an invalid escape in its quoted form',
        );
      }
      key += next;
    } else if (char === '"') {
      if (i !== value.length - 1) {
        throw IdempotencyRejection.malformedKey(headerName, 'has text after its closing quote');
      }
      return key;
    } else {
      key += char;
    }
  }
  throw IdempotencyRejection.malformedKey(headerName, 'has an unterminated quoted form');
}
