import { PROBLEM_CONTENT_TYPE, type ProblemDetails } from './problem-details';
import { IdempotencyError } from '../shared/idempotency-error';
import type { UnreadableRecordReason } from './sealing/record-cipher';

/** Problem `type` URIs of the answers the library gives itself (not stored, never replayed). */
export const IdempotencyProblemType = {
  missingKey: 'urn:idempotency:missing-key',
  malformedKey: 'urn:idempotency:malformed-key',
  keyInUse: 'urn:idempotency:key-in-use',
  keyReused: 'urn:idempotency:key-reused',
  databaseUnavailable: 'urn:idempotency:database-unavailable',
  unfingerprintableRequest: 'urn:idempotency:unfingerprintable-request',
  responseTooLarge: 'urn:idempotency:response-too-large',
  sealedRecordUnreadable: 'urn:idempotency:sealed-record-unreadable',
  writeOutsideTransaction: 'urn:idempotency:write-outside-transaction',
} as const;

/**
 * A request the library answers itself, before or instead of the handler. Status codes
 * follow the IETF httpapi Idempotency-Key draft: 400, 409 and 422; and 503 when the database
 * cannot be reached.
 */
export type RejectionReason =
  | 'rejected_key'
  | 'unfingerprintable_request'
  | 'in_progress'
  | 'lock_timeout'
  | 'fingerprint_mismatch'
  | 'unreadable_record'
  | 'released';

export class IdempotencyRejection extends IdempotencyError {
  constructor(
    readonly reason: RejectionReason,
    readonly problem: ProblemDetails,
    readonly headers: Record<string, string> = {},
    /** Why a sealed record could not be opened, on `unreadable_record`. */
    readonly unreadableReason?: UnreadableRecordReason,
  ) {
    super(problem.detail ?? problem.title);
  }

  get status(): number {
    return this.problem.status;
  }

  get contentType(): string {
    return PROBLEM_CONTENT_TYPE;
  }

  static missingKey(headerName: string): IdempotencyRejection {
    return new IdempotencyRejection('rejected_key', {
      type: IdempotencyProblemType.missingKey,
      title: 'Idempotency key required',
      status: 400,
      detail: `This operation requires the ${headerName} header.`,
    });
  }

  static malformedKey(headerName: string, reason: string): IdempotencyRejection {
    return new IdempotencyRejection('rejected_key', {
      type: IdempotencyProblemType.malformedKey,
      title: 'Malformed idempotency key',
      status: 400,
      detail: `The ${headerName} header ${reason}.`,
    });
  }

  /**
   * 400, not 422: the draft gives 422 to a key reused with another request, and a client that
   * reads it so would take a new key and send the same body again. This body is refused for
   * what it is (nested past `MAX_BODY_DEPTH`, or a number out of range), like JSON a body
   * parser refuses, whatever the key; nothing is claimed, so resending it changes nothing.
   */
  static unfingerprintableRequest(reason: string): IdempotencyRejection {
    return new IdempotencyRejection('unfingerprintable_request', {
      type: IdempotencyProblemType.unfingerprintableRequest,
      title: 'Request cannot be fingerprinted',
      status: 400,
      detail: `The request ${reason}.`,
    });
  }

  /**
   * 500: the handler's response is over `maxResponseBytes`. It could not be stored, so its writes
   * did not commit and the key is free; the same request will fail the same way.
   */
  static responseTooLarge(bytes: number, limit: number): IdempotencyRejection {
    return new IdempotencyRejection('released', {
      type: IdempotencyProblemType.responseTooLarge,
      title: 'Response too large to store',
      status: 500,
      detail: `The response is ${bytes} bytes, over the ${limit} bytes an idempotent response may have. Nothing was done.`,
    });
  }

  /**
   * 500: the key's row holds a sealed record (response or step result) that no listed key opens.
   * The row says the handler ran, so it must not run again: the request fails closed, and so
   * will every retry until the key that sealed it is listed again or the row expires.
   */
  static sealedRecordUnreadable(reason: UnreadableRecordReason): IdempotencyRejection {
    return new IdempotencyRejection(
      'unreadable_record',
      {
        type: IdempotencyProblemType.sealedRecordUnreadable,
        title: 'Stored outcome unreadable',
        status: 500,
        detail:
          'The outcome stored for this key cannot be decrypted with the configured keys. The request was not run again.',
      },
      {},
      reason,
    );
  }

  /**
   * 500: the handler wrote `entity` through a connection other than the request's transaction
   * (the write guard refused it before it reached the database). A bug in the service, not in
   * the request: its transaction rolled back, the key is free, and a retry fails the same way.
   */
  static writeOutsideTransaction(entity: string, scope: string): IdempotencyRejection {
    return new IdempotencyRejection('released', {
      type: IdempotencyProblemType.writeOutsideTransaction,
      title: 'Write outside the idempotent transaction',
      status: 500,
      detail: `The handler of ${scope} wrote ${entity} outside the request's transaction. The write was refused and nothing was done.`,
    });
  }

  /** 409. `lockTimeout`: the claim gave up waiting behind an uncommitted twin. */
  static keyInUse(retryAfterSeconds: number, lockTimeout = false): IdempotencyRejection {
    return new IdempotencyRejection(
      lockTimeout ? 'lock_timeout' : 'in_progress',
      {
        type: IdempotencyProblemType.keyInUse,
        title: 'Idempotency key in use',
        status: 409,
        detail: 'A request with this key is still being processed. Retry later.',
      },
      { 'retry-after': String(retryAfterSeconds) },
    );
  }

  /**
   * 503: the database could not be reached (see `isDatabaseUnavailable`). Nothing is claimed
   * unless its commit was cut off, and then the retry replays it; a phased attempt keeps its
   * recovery points (and, if it could not release it, its lease): either way the client retries.
   */
  static databaseUnavailable(retryAfterSeconds: number): IdempotencyRejection {
    return new IdempotencyRejection(
      'released',
      {
        type: IdempotencyProblemType.databaseUnavailable,
        title: 'Database unavailable',
        status: 503,
        detail:
          'The database could not be reached. Retry with the same key after Retry-After seconds.',
      },
      { 'retry-after': String(retryAfterSeconds) },
    );
  }

  static keyReused(): IdempotencyRejection {
    return new IdempotencyRejection('fingerprint_mismatch', {
      type: IdempotencyProblemType.keyReused,
      title: 'Idempotency key reused',
      status: 422,
      detail: 'This key was already used with a different request.',
    });
  }
}
