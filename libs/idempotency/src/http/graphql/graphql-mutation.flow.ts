import type { CallHandler, ExecutionContext } from '@nestjs/common';
import type { GraphQLResolveInfo } from 'graphql';
import { keyLabel } from '../fingerprint';
import { fingerprintedHeaders, type HttpRequestLike, underlyingRequest } from '../http-exchange';
import type { ResolvedIdempotencyOptions } from '../idempotency.defaults';
import { IdempotencyProblemType, IdempotencyRejection } from '../idempotency.errors';
import type { StoredResponse } from '../idempotency.options';
import { parseIdempotencyKey } from '../idempotency-key.parser';
import type { IdempotentRequest } from '../idempotent-request';
import { tenantIdOf } from '../key-id';
import type { Delivery, RequestFlow } from '../request-flow';
import type { RouteOptions } from '../route-options';
import { fieldOrdinal } from './field-ordinal';
import { IdempotencyGraphQLErrorCode } from './graphql-error-codes';
import { graphqlLibrary } from './graphql-library';
import { deliverOutcome, settleResolver } from './graphql-outcome';
import { operationFingerprint } from './operation-fingerprint';

const CODE_BY_PROBLEM_TYPE = new Map<string, string>(
  Object.entries(IdempotencyProblemType).map(([name, type]) => [
    type,
    IdempotencyGraphQLErrorCode[name as keyof typeof IdempotencyProblemType],
  ]),
);

/**
 * The resolver's `info` when `context` is a root field of a mutation operation. Queries,
 * subscriptions and the fields resolved inside a mutation's result (`@ResolveField()` of a
 * class-level `@Idempotent()` resolver) are left alone: they read, and the mutation's record
 * already covers the operation.
 */
export function mutationField(context: ExecutionContext): GraphQLResolveInfo | undefined {
  const info = context.getArgByIndex<GraphQLResolveInfo | undefined>(3);
  if (!info) return undefined;
  const mutation = info.operation.operation === graphqlLibrary().OperationTypeNode.MUTATION;
  return mutation && info.parentType === info.schema.getMutationType() ? info : undefined;
}

/**
 * One field of a mutation operation under `@Idempotent()`. Its key comes from the HTTP request
 * carrying the operation; its record is its own: the scope is the field's (`GRAPHQL
 * Mutation.createOrder`, or the decorator's `scope` and the field) followed by which of the
 * operation's fields of that name it is (`#1`, `#2`: see `fieldOrdinal`), so two aliased fields in
 * one document are two records, a renamed alias is not a new one, and no REST route shares the
 * key space.
 */
export class GraphqlMutationFlow implements RequestFlow {
  readonly eventScope: string;
  private readonly scope: string;

  constructor(
    private readonly context: ExecutionContext,
    private readonly next: CallHandler,
    private readonly route: RouteOptions,
    private readonly info: GraphQLResolveInfo,
    private readonly options: ResolvedIdempotencyOptions,
  ) {
    const field = `${info.parentType.name}.${info.fieldName}`;
    this.eventScope = route.scope ?? `GRAPHQL ${field}`;
    // The ordinal counts fields of one name: a decorator's scope, which several mutations may
    // share, gets the field's name too, or `credit` and `debit` of one document would be one
    // record (the second replaying the first).
    const named = route.scope === undefined ? this.eventScope : `${route.scope} ${field}`;
    this.scope = `${named} #${fieldOrdinal(graphqlLibrary(), info)}`;
  }

  async describe(): Promise<IdempotentRequest | undefined> {
    const { headerName, maxKeyLength, fingerprintHeaders } = this.options;
    const request = underlyingRequest<HttpRequestLike>(this.context);
    const key = parseIdempotencyKey(
      request?.headers[headerName.toLowerCase()],
      headerName,
      maxKeyLength,
    );
    if (key === undefined) {
      if (this.route.required) throw IdempotencyRejection.missingKey(headerName);
      return undefined;
    }
    const tenantId = tenantIdOf(await this.options.tenantResolver(this.context));
    const scope = this.scope;
    const requestHash = operationFingerprint(
      graphqlLibrary(),
      this.info,
      fingerprintedHeaders(request, fingerprintHeaders),
    );
    let label: string | undefined;
    const described: IdempotentRequest = {
      context: this.context,
      next: this.next,
      route: this.route,
      id: { tenantId, scope, key },
      requestHash,
      get label() {
        return (label ??= keyLabel(tenantId, scope, key));
      },
      eventScope: this.eventScope,
      settle: (beforeStoringFailure) =>
        settleResolver(described, this.options, beforeStoringFailure),
    };
    return described;
  }

  /** Replay headers are not sent: one HTTP response carries many fields, fresh and replayed. */
  deliver(stored: StoredResponse): Delivery {
    return deliverOutcome(stored);
  }

  released(error: unknown): Delivery {
    return { error };
  }

  reject(rejection: IdempotencyRejection): Delivery {
    const { GraphQLError } = graphqlLibrary();
    const retryAfter = rejection.headers['retry-after'];
    return {
      error: new GraphQLError(rejection.problem.detail ?? rejection.problem.title, {
        extensions: {
          code: CODE_BY_PROBLEM_TYPE.get(rejection.problem.type) ?? 'IDEMPOTENCY_REJECTED',
          ...(retryAfter === undefined ? {} : { retryAfter: Number(retryAfter) }),
        },
      }),
    };
  }
}
