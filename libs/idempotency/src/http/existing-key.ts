import { IdempotencyRejection } from './idempotency.errors';
import type { StoredResponse } from './idempotency.options';
import type { RecordedResponse } from './sealing/sealed-response';

/** A row someone else claimed first, as this transaction sees it. */
export interface ExistingKey {
  status: 'in_progress' | 'completed';
  requestHash: string;
  expired: boolean;
  /** Milliseconds the row has left to live, by the database's clock. */
  expiresInMs: number;
  /** Phased mode: whole seconds left on a live lease (undefined when there is none). */
  leaseSecondsLeft?: number;
  /** The recorded response, sealed or plain (see `RecordSealer.openResponse`). */
  response?: RecordedResponse;
}

/** A completed outcome to replay, and how long its row has left to live. */
export interface StoredReplay {
  response: StoredResponse;
  expiresInMs: number;
}

/**
 * What a request meets when its key is already taken, the same in every mode:
 * - `'expired'`: the completed row outlived its time to live; the key is to be claimed as new;
 * - a stored response to replay, when the request is the same and completed, opened by `open`
 *   (after the fingerprint check: a 422 needs no key);
 * - a rejection: 422 for another request under this key, 409 while it is still running.
 */
export function resolveExistingKey(
  existing: ExistingKey,
  requestHash: string,
  retryAfterSeconds: number,
  open: (recorded: RecordedResponse) => StoredResponse,
): 'expired' | StoredReplay {
  // Only a completed key expires; one in progress keeps its recovery points for its retries.
  if (existing.expired && existing.status === 'completed') return 'expired';
  if (existing.requestHash !== requestHash) throw IdempotencyRejection.keyReused();
  if (existing.status === 'completed' && existing.response) {
    return { response: open(existing.response), expiresInMs: existing.expiresInMs };
  }
  const wait = Math.max(1, existing.leaseSecondsLeft ?? retryAfterSeconds);
  throw IdempotencyRejection.keyInUse(wait);
}
