import type { CallHandler, ClassSerializerContextOptions, ExecutionContext } from '@nestjs/common';
import type { StoredResponse } from './idempotency.options';
import type { KeyId } from './key-id';
import type { RouteOptions } from './route-options';

/** One request on an idempotent route, after its key, tenant and fingerprint are known. */
export interface IdempotentRequest {
  context: ExecutionContext;
  next: CallHandler;
  route: RouteOptions;
  /** The route's `@SerializeOptions()`, for class instances the handler returns. */
  serializeOptions?: ClassSerializerContextOptions;
  id: KeyId;
  /** The fingerprint: computed on first use (a replay from the cache may not need it). */
  readonly requestHash: string;
  /**
   * The request as sent, as JSON text (`verbatimRequest`): a replay from the cache whose text
   * is its first request's is matched without a fingerprint. Absent: the fingerprint decides.
   */
  verbatim?: string;
  /** Short hash of the key for logs; raw keys never reach a log line. Computed on first use. */
  readonly label: string;
  /**
   * Runs the handler and settles its outcome (`beforeStoringFailure` as in `settleHandler`).
   * Absent: `settleHandler`, which records an HTTP response. A GraphQL mutation field records
   * its resolver's value instead.
   */
  settle?: (
    beforeStoringFailure: () => Promise<void>,
  ) => Promise<{ response: StoredResponse; failed: boolean }>;
  /**
   * The scope events carry, when the key's scope holds parts the client chose (a GraphQL
   * alias): metrics labelled by it must not grow with every alias. Absent: `id.scope`.
   */
  eventScope?: string;
}

/** How a request on a claimed or taken key ended. */
export type Outcome =
  | { kind: 'executed'; response: StoredResponse; failed: boolean }
  | { kind: 'replayed'; response: StoredResponse; expiresInMs: number };

/** Runs a request under one execution mode (atomic or phased). */
export interface IdempotentRunner {
  run(request: IdempotentRequest): Promise<Outcome>;
}
