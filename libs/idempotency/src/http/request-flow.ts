import type { IdempotencyRejection } from './idempotency.errors';
import type { StoredResponse } from './idempotency.options';
import type { IdempotentRequest } from './idempotent-request';

/**
 * What the interceptor hands back: a value for the router (or GraphQL) to send, or an error to
 * throw once the request flow is over (a GraphQL error is thrown, never returned).
 */
export type Delivery = { value: unknown } | { error: unknown };

/**
 * What differs between an HTTP request and a GraphQL mutation field: how the key, tenant and
 * fingerprint are read, and how a stored outcome or a rejection goes back. The interceptor's
 * state machine (cache, in-flight twins, the runner, events) is the same for both.
 */
export interface RequestFlow {
  /** The scope events carry. */
  readonly eventScope: string;
  /** The key, tenant and fingerprint; undefined when an optional key is absent. */
  describe(): IdempotentRequest | undefined | Promise<IdempotentRequest | undefined>;
  /** A recorded outcome, fresh or replayed; `replayHeaders` from `markReplays`/`onReplay`. */
  deliver(stored: StoredResponse, replayHeaders?: Record<string, string>): Delivery;
  /** An answer of the library's own. */
  reject(rejection: IdempotencyRejection): Delivery;
  /**
   * A failure the key was released after, for the app's own error handling: its writes were
   * rolled back, so what the answer pointed at (a `Location`) is gone.
   */
  released(error: unknown): Delivery;
}
