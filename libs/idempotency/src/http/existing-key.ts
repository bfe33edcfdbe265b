import { IdempotencyRejection } from './idempotency.errors';
import type { StoredResponse } from './idempotency.options';

/** A row someone else claimed first, as this transaction sees it. */
export interface ExistingKey {
  status: 'in_progress' | 'completed';
  requestHash: string;
  expired: boolean;
  /** Milliseconds the row has left to live, by the database's clock. */
  expiresInMs: number;
  /** Phased mode: whole seconds left on a live lease (undefined when there is none). */
  leaseSecondsLeft?: number;
  response?: StoredResponse;
}

/** A completed outcome to replay, and how long its row has left to live. */
export interface StoredReplay {
  response: StoredResponse;
  expiresInMs: number;
}

/**
 * What a request meets when its key is already taken, the same in every mode:
 * - `'expired'`: the completed row outlived its time to live; the key is to be claimed as new;
 * - a stored response to replay, when the request is the same and completed;
 * - a rejection: 422 for another request under this key, 409 while it is still running.
 */
export function resolveExistingKey(
  existing: ExistingKey,
  requestHash: string,
  retryAfterSeconds: number,
): 'expired' | StoredReplay {
  // Only a completed key expires; one in progress keeps its recovery points for its retries.
  if (existing.expired && existing.status === 'completed') return 'expired';
  if (existing.requestHash !== requestHash) throw IdempotencyRejection.keyReused();
  if (existing.status === 'completed' && existing.response) {
    return { response: existing.response, expiresInMs: existing.expiresInMs };
  }
  const wait = Math.max(1, existing.leaseSecondsLeft ?? retryAfterSeconds);
  throw IdempotencyRejection.keyInUse(wait);
}
