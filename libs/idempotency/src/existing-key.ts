import { IdempotencyRejection } from './idempotency.errors';
import type { StoredResponse } from './idempotency.options';
import type { ExistingKey } from './idempotency-key.store';

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
