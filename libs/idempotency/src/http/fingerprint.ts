import { hash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { IdempotencyRejection } from './idempotency.errors';
import type { UploadedFileDigest } from './request-body';

/**
 * The deepest nesting of arrays and objects a fingerprinted body may have (an empty `[]` or
 * `{}` is a level too); the query and the path parameters are held to it as well. Deeper
 * requests get a 400 problem before any database work. `canonicalize` and class-transformer
 * recurse once per level: bounded here, client input cannot overflow the stack.
 */
export const MAX_BODY_DEPTH = 128;

/** The parts of a request that decide whether two requests are "the same". */
export interface FingerprintInput {
  method: string;
  route: string;
  params: unknown;
  query: unknown;
  body: unknown;
  headers?: Record<string, string | undefined>;
  /** Uploaded files, digested (`uploadedFileDigests`); absent on a request without any. */
  files?: readonly UploadedFileDigest[];
  /** The parameters of a controller's `host` pattern (`:account.example.com`); absent without. */
  hosts?: Record<string, unknown>;
}

/** Keys `assertFingerprintable` reports, as bits: class-transformer drops both kinds. */
export const PROTO_KEY = 1;
export const CONSTRUCTOR_KEY = 2;
/**
 * A value JSON has no form for on the way: a BigInt, a Map or a Set (a GraphQL scalar's value,
 * or a DTO property class-transformer made one of). Canonical JSON gets a copy with each as JSON
 * (`asJsonValues`), so that its content counts.
 */
export const NON_JSON_VALUE = 4;

/**
 * Walks `root` as `canonicalize` will serialise it, without recursion, and throws the 400
 * rejection at the first level past `maxDepth` or the first NaN or infinity (a literal such as
 * `1e400` that JSON.parse overflowed: RFC 8785 has no form for it). Returns which of an own
 * `__proto__` key (`PROTO_KEY`) and an own `constructor` key (`CONSTRUCTOR_KEY`) an object on
 * the way has, as bits.
 */
export function assertFingerprintable(root: unknown, maxDepth: number): number {
  let keys = 0;
  // Containers still to visit, and their levels (the root container is level 1). Scalars are
  // checked where they are met and never queued: most of a body is scalars.
  const pending: object[] = [];
  const levels: number[] = [];
  keys |= visit(root, 1, pending, levels);
  while (pending.length > 0) {
    const value = pending.pop() as object;
    const level = levels.pop() as number;
    if (level > maxDepth) throw tooDeep();
    if (Array.isArray(value)) {
      for (const item of value) keys |= visit(item, level + 1, pending, levels);
    } else if (value instanceof Set) {
      for (const item of value) keys |= visit(item, level + 1, pending, levels);
    } else if (value instanceof Map) {
      // Each entry as a [key, value] pair: one level for the pair.
      for (const [key, item] of value) {
        keys |= visit(key, level + 2, pending, levels) | visit(item, level + 2, pending, levels);
      }
    } else {
      const object = value as Record<string, unknown>;
      for (const key of Object.keys(object)) {
        if (key === '__proto__') keys |= PROTO_KEY;
        else if (key === 'constructor') keys |= CONSTRUCTOR_KEY;
        keys |= visit(object[key], level + 1, pending, levels);
      }
    }
  }
  return keys;
}

/** Queues a container, checks a scalar; returns `NON_JSON_VALUE` for one, else 0. */
function visit(value: unknown, level: number, pending: object[], levels: number[]): number {
  value = throughToJson(value);
  if (typeof value === 'object' && value !== null) {
    // Its content is not there to see: two requests with different files would be "the same".
    // A JSON body never holds one; GraphQL variables can (an upload scalar's promise).
    if (typeof (value as { then?: unknown }).then === 'function') {
      throw IdempotencyRejection.unfingerprintableRequest(
        'holds a promise (a file upload?), whose content cannot be fingerprinted before it is read',
      );
    }
    pending.push(value);
    levels.push(level);
    return value instanceof Map || value instanceof Set ? NON_JSON_VALUE : 0;
  } else if (typeof value === 'number' && !Number.isFinite(value)) {
    throw IdempotencyRejection.unfingerprintableRequest(
      `holds ${value}, a number JSON cannot represent (a literal out of range, such as 1e400)`,
    );
  } else if (typeof value === 'bigint') {
    return NON_JSON_VALUE;
  }
  return 0;
}

/**
 * What canonicalize serialises in place of `value`: what its toJSON returns (a Date's string),
 * hop after hop. The hops are bounded: a toJSON that returns its own object must not loop for
 * ever.
 */
function throughToJson(value: unknown): unknown {
  let hops = 0;
  while (
    typeof value === 'object' &&
    value !== null &&
    (value as { toJSON?: unknown }).toJSON instanceof Function
  ) {
    if (++hops > MAX_BODY_DEPTH) throw tooDeep();
    value = (value as { toJSON(): unknown }).toJSON();
  }
  return value;
}

const tooDeep = () =>
  IdempotencyRejection.unfingerprintableRequest(
    `nests arrays and objects deeper than ${MAX_BODY_DEPTH} levels`,
  );

/**
 * RFC 8785 canonical JSON: sorted keys, canonical numbers, no insignificant whitespace.
 * `undefined` (an absent body) becomes `null`, so "no body" is one value, not a crash. A value
 * nested deeper than `MAX_BODY_DEPTH`, or holding NaN or an infinity, throws the 400 rejection.
 */
export function canonicalJson(value: unknown): string {
  return canonicalJsonOfChecked(value, assertFingerprintable(value, MAX_BODY_DEPTH));
}

/** `found`: the bits `assertFingerprintable` returned for `value`. */
function canonicalJsonOfChecked(value: unknown, found: number): string {
  const plain = found & NON_JSON_VALUE ? asJsonValues(value) : value;
  const text = canonicalize(plain === undefined ? null : plain);
  if (text === undefined) throw new TypeError('value has no JSON representation');
  return text;
}

/**
 * A copy of `value` with what JSON has no form for as JSON: a BigInt as its decimal text
 * (canonicalize, as JSON.stringify, throws on one), a Set as the array of its values, a Map as
 * the array of its [key, value] pairs (JSON.stringify would give `{}` for both, losing their
 * content), each in insertion order, as an array's. Where the value's type is known (a DTO's
 * property, a GraphQL variable the operation's document types), that form cannot be mistaken
 * for another value. Recursive: `value` passed the depth bound already. Only requests that hold
 * such a value pay for the copy.
 */
function asJsonValues(value: unknown): unknown {
  value = throughToJson(value);
  if (typeof value === 'bigint') return value.toString();
  if (Array.isArray(value) || value instanceof Set) return Array.from(value, asJsonValues);
  if (value instanceof Map) {
    return Array.from(value, ([key, item]) => [asJsonValues(key), asJsonValues(item)]);
  }
  if (typeof value !== 'object' || value === null) return value;
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    // defineProperty: a `__proto__` key stays an own key of the copy, as it was of the value.
    Object.defineProperty(copy, key, {
      value: asJsonValues((value as Record<string, unknown>)[key]),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return copy;
}

/**
 * SHA-256 (hex) of the canonical request. Only the hash is stored, never the body, so a key
 * table leak does not leak payloads.
 */
export function requestFingerprint(input: FingerprintInput): string {
  const request = {
    method: input.method.toUpperCase(),
    route: input.route,
    params: input.params ?? {},
    query: input.query ?? {},
    body: input.body ?? null,
    headers: input.headers ?? {},
    // Only when there are files: every other request keeps the fingerprint it always had.
    ...(input.files && { files: input.files }),
    ...(input.hosts && { hosts: input.hosts }),
  };
  // One level more: the request object around the body.
  const found = assertFingerprintable(request, MAX_BODY_DEPTH + 1);
  // crypto.hash: one call, no Hash object; about a quarter of createHash's time for a request.
  return hash('sha256', canonicalJsonOfChecked(request, found), 'hex');
}

/**
 * The longest `verbatimRequest` kept: the replay cache holds one per entry, so its memory stays
 * bounded by `maxEntries` times this.
 */
export const MAX_VERBATIM_CHARS = 8192;

/**
 * The request as its client sent it, as JSON text: a shortcut for the replay cache, never
 * stored in the database. Two requests with the same text have the same fingerprint, since the
 * fingerprint is a function of the JSON value (canonical form, DTO defaults) and the text is
 * that value. A retry sends the same bytes, so it is matched by a string comparison instead of
 * the canonical form and its hash. Undefined when longer than `MAX_VERBATIM_CHARS` or when
 * JSON.stringify refuses it (a body nested too deep): the fingerprint decides then.
 *
 * One difference with the fingerprint, accepted: JSON.stringify writes an infinity as `null`,
 * where the fingerprint refuses it with a 400. A retry holding `1e400` where its first request
 * held `null` is thus replayed, from the cache only, instead of refused.
 */
export function verbatimRequest(input: FingerprintInput): string | undefined {
  let text: string | undefined;
  try {
    text = JSON.stringify(input);
  } catch {
    return undefined;
  }
  return text !== undefined && text.length <= MAX_VERBATIM_CHARS ? text : undefined;
}

/** A short, non-reversible label for logs: raw keys never appear in logs. */
export function keyLabel(tenantId: string, scope: string, key: string): string {
  return hash('sha256', `${tenantId}\n${scope}\n${key}`, 'hex').slice(0, 12);
}
