import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';

/** The parts of a request that decide whether two requests are "the same". */
export interface FingerprintInput {
  method: string;
  route: string;
  params: unknown;
  query: unknown;
  body: unknown;
  headers?: Record<string, string | undefined>;
}

/**
 * RFC 8785 canonical JSON: sorted keys, canonical numbers, no insignificant whitespace.
 * `undefined` (an absent body) becomes `null`, so "no body" is one value, not a crash.
 */
export function canonicalJson(value: unknown): string {
  const text = canonicalize(value === undefined ? null : value);
  if (text === undefined) throw new TypeError('value has no JSON representation');
  return text;
}

/**
 * SHA-256 (hex) of the canonical request. Only the hash is stored, never the body, so a key
 * table leak does not leak payloads.
 */
export function requestFingerprint(input: FingerprintInput): string {
  const canonical = canonicalJson({
    method: input.method.toUpperCase(),
    route: input.route,
    params: input.params ?? {},
    query: input.query ?? {},
    body: input.body ?? null,
    headers: input.headers ?? {},
  });
  return createHash('sha256').update(canonical, 'utf8').digest('hex');
}

/** A short, non-reversible label for logs: raw keys never appear in logs. */
export function keyLabel(tenantId: string, scope: string, key: string): string {
  return createHash('sha256').update(`${tenantId}\n${scope}\n${key}`).digest('hex').slice(0, 12);
}
