import type { IdempotencyProblemType } from '../idempotency.errors';

/**
 * `extensions.code` of the GraphQL errors the library answers itself on a mutation, one per
 * problem type of the HTTP path (same cases, same meaning, nothing claimed or stored).
 */
export const IdempotencyGraphQLErrorCode = {
  /** No key, and the mutation requires one. */
  missingKey: 'IDEMPOTENCY_KEY_REQUIRED',
  /** The key header is malformed (empty, too long, not printable ASCII). */
  malformedKey: 'IDEMPOTENCY_KEY_INVALID',
  /** The key's first request is still running; retry after `extensions.retryAfter` seconds. */
  keyInUse: 'IDEMPOTENCY_KEY_IN_USE',
  /** The key was used with another operation document, variables or operation name. */
  keyReused: 'IDEMPOTENCY_KEY_REUSED',
  /** The database could not be reached; retry after `extensions.retryAfter` seconds. */
  databaseUnavailable: 'IDEMPOTENCY_UNAVAILABLE',
  /** The variables nest too deep or hold a number out of range. */
  unfingerprintableRequest: 'IDEMPOTENCY_REQUEST_UNFINGERPRINTABLE',
  /** The resolver's result is over `maxResponseBytes`: rolled back, the key released. */
  responseTooLarge: 'IDEMPOTENCY_RESPONSE_TOO_LARGE',
  /** The stored record opens with no listed encryption key: failed closed, the resolver not run. */
  sealedRecordUnreadable: 'IDEMPOTENCY_RECORD_UNREADABLE',
  /** The resolver wrote outside the mutation's transaction (`writeGuard`): rolled back, released. */
  writeOutsideTransaction: 'IDEMPOTENCY_WRITE_OUTSIDE_TRANSACTION',
} as const satisfies Record<keyof typeof IdempotencyProblemType, string>;

export type IdempotencyGraphQLErrorCode =
  (typeof IdempotencyGraphQLErrorCode)[keyof typeof IdempotencyGraphQLErrorCode];
