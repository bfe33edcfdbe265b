import { HttpException, HttpStatus } from '@nestjs/common';
import { lastValueFrom } from 'rxjs';
import { assertStorable } from '../handler-outcome';
import type { ResolvedIdempotencyOptions } from '../idempotency.defaults';
import type { StoredResponse } from '../idempotency.options';
import type { IdempotentRequest } from '../idempotent-request';
import type { Delivery } from '../request-flow';
import { GuardedRequest } from '../write-guard/guarded-request';
import { graphqlLibrary } from './graphql-library';

/** Content type of a recorded GraphQL outcome: the envelope below, not an HTTP body. */
export const GRAPHQL_OUTCOME_CONTENT_TYPE = 'application/vnd.idempotency.graphql-outcome+json';

/** A stored GraphQL error: what makes it the same error on every replay. */
export interface StoredGraphqlError {
  message: string;
  extensions: Record<string, unknown>;
}

/** The recorded outcome of a mutation field: its resolver's value, or its business error. */
type Envelope = { data: unknown } | { error: StoredGraphqlError };

/**
 * The HTTP status a GraphQL business error counts as for `shouldStore`, when it names none in
 * `extensions.http.status`: a refusal of this very request, as 422 is on REST.
 */
const DEFAULT_ERROR_STATUS = 422;

/** Codes that say "something went wrong here", not "the business said no": never stored. */
const TRANSIENT_CODES = new Set(['INTERNAL_SERVER_ERROR']);

/**
 * Runs the resolver and decides what its outcome means for the key, as `settleHandler` does
 * for an HTTP handler:
 * - a value is recorded as JSON (the value the first caller gets is that JSON too, so the
 *   first answer and every replay resolve the same data);
 * - a stored business error (see `storedError`) is recorded, after `beforeStoringFailure`;
 * - anything else is thrown: the caller releases the key.
 */
export async function settleResolver(
  request: IdempotentRequest,
  options: ResolvedIdempotencyOptions,
  beforeStoringFailure: () => Promise<void>,
): Promise<{ response: StoredResponse; failed: boolean }> {
  const guard = GuardedRequest.of(request, options);
  const handle = () => lastValueFrom(request.next.handle(), { defaultValue: undefined });
  let value: unknown;
  try {
    value = await (guard ? guard.watch(handle) : handle());
    // As on REST: a write the guard refused fails the mutation whatever the resolver made of it.
    guard?.assertNoWriteRefused();
  } catch (error) {
    guard?.assertNoWriteRefused();
    const stored = storedError(error, options);
    if (!stored) throw error;
    assertStorable(stored.response, request, options);
    await beforeStoringFailure();
    return { response: stored.response, failed: true };
  }
  const response = envelope(200, { data: value ?? null });
  assertStorable(response, request, options);
  return { response, failed: false };
}

/**
 * The error to record, or undefined when the error must release the key:
 * - an `HttpException` whose status `shouldStore` stores, as a GraphQL error with
 *   `extensions.code` the status name (`UNPROCESSABLE_ENTITY`; `UNAUTHENTICATED` for 401),
 *   `extensions.status` and `extensions.originalError` (the exception's response);
 * - a `GraphQLError` with a string `extensions.code`, other than `INTERNAL_SERVER_ERROR` and the
 *   library's own `IDEMPOTENCY_*`, whose `extensions.http.status` (422 when absent) `shouldStore`
 *   stores: its message and extensions, as JSON.
 */
function storedError(
  error: unknown,
  options: ResolvedIdempotencyOptions,
): { response: StoredResponse } | undefined {
  if (error instanceof HttpException) {
    const status = error.getStatus();
    if (!options.shouldStore(status, error)) return undefined;
    return {
      response: envelope(status, {
        error: {
          message: error.message,
          extensions: {
            code: status === 401 ? 'UNAUTHENTICATED' : (HttpStatus[status] ?? `HTTP_${status}`),
            status,
            originalError: error.getResponse(),
          },
        },
      }),
    };
  }
  if (!(error instanceof graphqlLibrary().GraphQLError)) {
    // Anything else is asked about as a 500, as on REST: stored (as a plain internal error,
    // without its message) only when the policy marks it final.
    if (!options.shouldStore(500, error)) return undefined;
    return {
      response: envelope(500, {
        error: { message: 'Internal server error', extensions: { code: 'INTERNAL_SERVER_ERROR' } },
      }),
    };
  }
  const { code, http } = error.extensions as { code?: unknown; http?: { status?: unknown } };
  if (typeof code !== 'string' || TRANSIENT_CODES.has(code) || code.startsWith('IDEMPOTENCY_'))
    return undefined;
  const status = typeof http?.status === 'number' ? http.status : DEFAULT_ERROR_STATUS;
  if (!options.shouldStore(status, error)) return undefined;
  return {
    response: envelope(status, {
      error: {
        message: error.message,
        // Through JSON now, so the first answer carries what every replay will.
        extensions: JSON.parse(JSON.stringify(error.extensions)) as Record<string, unknown>,
      },
    }),
  };
}

function envelope(statusCode: number, outcome: Envelope): StoredResponse {
  return {
    statusCode,
    headers: { 'content-type': GRAPHQL_OUTCOME_CONTENT_TYPE },
    body: Buffer.from(JSON.stringify(outcome), 'utf8'),
  };
}

/**
 * A recorded outcome as the resolver's answer: the value, or the stored error thrown as a
 * `GraphQLError` (GraphQL adds the path and locations of the field, the same every time).
 * A row of another scope's kind (an HTTP body) cannot reach here: the scopes differ.
 */
export function deliverOutcome(stored: StoredResponse): Delivery {
  const outcome = JSON.parse(stored.body.toString('utf8')) as Envelope;
  if ('data' in outcome) return { value: outcome.data };
  const { GraphQLError } = graphqlLibrary();
  return {
    error: new GraphQLError(outcome.error.message, { extensions: outcome.error.extensions }),
  };
}
