import { HttpException, InternalServerErrorException, Logger } from '@nestjs/common';
import { lastValueFrom } from 'rxjs';
import { httpResponse } from './http-exchange';
import type { ResolvedIdempotencyOptions } from './idempotency.defaults';
import type { StoredResponse } from './idempotency.options';
import type { IdempotentRequest } from './idempotent-request';
import { captureFailure, captureResponse } from './stored-response';
import { IdempotencyRejection } from './idempotency.errors';
import { GuardedRequest } from './write-guard/guarded-request';

const logger = new Logger('Idempotency');

/** The response to record, and whether it is a (deterministic) failure. */
export interface SettledHandler {
  response: StoredResponse;
  failed: boolean;
}

/** A successful response whose status the policy does not store: sent, never recorded. */
export class UnstoredOutcome extends Error {
  constructor(readonly response: StoredResponse) {
    super('outcome not stored');
  }
}

/**
 * Runs the handler and decides what its outcome means for the key:
 * - a result, or a thrown error the policy stores, becomes the response to record;
 *   `beforeStoringFailure` runs first (the atomic mode rolls back to its savepoint there);
 * - anything else is thrown: the caller releases the key.
 * The policy sees the thrown error itself, so a handler can mark one that follows an effect
 * already committed elsewhere as final; a non-HTTP error is asked about as a 500 and, when
 * stored, recorded as a plain 500 problem that does not reveal its message.
 * A write the guard refused (`writeGuard`) fails the request whatever the handler made of it.
 * `next.handle()` binds the async context when called, so call this inside the transaction
 * the handler must join.
 */
export async function settleHandler(
  request: IdempotentRequest,
  options: ResolvedIdempotencyOptions,
  beforeStoringFailure: () => Promise<void> = () => Promise.resolve(),
): Promise<SettledHandler> {
  const response = httpResponse(request.context);
  const guard = GuardedRequest.of(request, options);
  const handle = () => lastValueFrom(request.next.handle(), { defaultValue: undefined });
  let captured: StoredResponse;
  try {
    const value: unknown = await (guard ? guard.watch(handle) : handle());
    // A write the guard refused fails the request even when the handler caught the refusal:
    // whatever it answered, its other writes may depend on the one that never happened.
    guard?.assertNoWriteRefused();
    captured = captureResponse(value, response, options.storedHeaders, request.serializeOptions);
  } catch (error) {
    guard?.assertNoWriteRefused();
    const exception = error instanceof HttpException ? error : undefined;
    if (!options.shouldStore(exception?.getStatus() ?? 500, error)) throw error;
    const stored = exception ?? new InternalServerErrorException();
    const failure = captureFailure(
      stored,
      options.renderException(stored),
      response,
      options.storedHeaders,
    );
    assertStorable(failure, request, options);
    await beforeStoringFailure();
    return { response: failure, failed: true };
  }
  // A returned result is the handler's success (redirects included): its writes commit with it.
  // Only a returned error status goes through the policy.
  if (captured.statusCode >= 400 && !options.shouldStore(captured.statusCode, undefined)) {
    // Released: its writes roll back, so a Location would point at nothing.
    delete captured.headers.location;
    throw new UnstoredOutcome(captured);
  }
  assertStorable(captured, request, options);
  return { response: captured, failed: false };
}

/**
 * A response over `maxResponseBytes` is refused before anything commits: stored, it would bloat
 * every replay; sent without being stored, a retry would run the handler again.
 */
export function assertStorable(
  response: StoredResponse,
  request: IdempotentRequest,
  options: ResolvedIdempotencyOptions,
): void {
  if (response.body.length <= options.maxResponseBytes) return;
  logger.error(
    `${request.id.scope}: a response of ${response.body.length} bytes is over maxResponseBytes ` +
      `(${options.maxResponseBytes}); rolled back, key ${request.label} released`,
  );
  throw IdempotencyRejection.responseTooLarge(response.body.length, options.maxResponseBytes);
}
