import {
  type CallHandler,
  type ExecutionContext,
  Inject,
  Injectable,
  Logger,
  type NestInterceptor,
} from '@nestjs/common';
import { HttpAdapterHost, Reflector } from '@nestjs/core';
import { defer, lastValueFrom, type Observable } from 'rxjs';
import { AtomicRunner } from './atomic/atomic.runner';
import { bodyWithDefaults } from './body-defaults';
import type { IdempotencyEventType } from './events/idempotency-event';
import { IdempotencyEvents } from './events/idempotency-events';
import { keyLabel, requestFingerprint } from './fingerprint';
import { UnstoredOutcome } from './handler-outcome';
import { headerValue, httpRequest, httpResponse, routePattern } from './http-exchange';
import { IDEMPOTENCY_OPTIONS, IDEMPOTENT_ROUTE } from './idempotency.constants';
import type { ResolvedIdempotencyOptions } from './idempotency.defaults';
import { IdempotencyRejection } from './idempotency.errors';
import type { IdempotentOptions, StoredResponse } from './idempotency.options';
import { parseIdempotencyKey } from './idempotency-key.parser';
import type { IdempotentRequest } from './idempotent-request';
import { PhasedRunner } from './phased/phased.runner';
import { CompletedResponseCache } from './replay/completed-response.cache';
import { wireBody } from './stored-response';
import { TransactionHostRef } from './transaction-host.ref';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

// Where `@SerializeOptions()` keeps its options (Nest's ClassSerializerInterceptor reads it too).
const CLASS_SERIALIZER_OPTIONS = 'class_serializer:options';

/**
 * The request flow of an `@Idempotent()` route: read the key, the tenant and the fingerprint,
 * hand the request to its mode (atomic or phased), and send what it decided. No SQL here.
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  private readonly logger = new Logger('Idempotency');

  constructor(
    @Inject(IDEMPOTENCY_OPTIONS) private readonly options: ResolvedIdempotencyOptions,
    private readonly atomic: AtomicRunner,
    private readonly phased: PhasedRunner,
    private readonly reflector: Reflector,
    private readonly adapterHost: HttpAdapterHost,
    private readonly events: IdempotencyEvents,
    private readonly cache: CompletedResponseCache,
    private readonly transactions: TransactionHostRef,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const route = this.reflector.getAllAndOverride<IdempotentOptions | undefined>(IDEMPOTENT_ROUTE, [
      context.getHandler(),
      context.getClass(),
    ]);
    if (!route || context.getType() !== 'http') return next.handle();
    // Safe methods are idempotent by HTTP semantics: a class-level @Idempotent() leaves them be.
    if (SAFE_METHODS.has(httpRequest(context).method.toUpperCase())) return next.handle();
    return defer(() => this.handle(context, next, route));
  }

  private async handle(context: ExecutionContext, next: CallHandler, route: IdempotentOptions): Promise<unknown> {
    const started = performance.now();
    const mode = route.phased ? 'phased' : 'atomic';
    let request: IdempotentRequest | undefined;
    const report = (type: IdempotencyEventType, statusCode?: number) =>
      this.events.emit({ type, scope: request?.id.scope, mode, statusCode, durationMs: performance.now() - started });
    try {
      request = await this.describe(context, next, route);
      if (!request) return await lastValueFrom(next.handle(), { defaultValue: undefined });
      const cached = this.cache.get(request.id);
      if (cached) {
        if (cached.requestHash !== request.requestHash) throw IdempotencyRejection.keyReused();
        report('replayed', cached.response.statusCode);
        return await this.replay(context, request, cached.response);
      }
      // Inside the app's own transaction, a fresh outcome is not committed yet when it comes
      // back: that transaction may still roll back, so only the database may replay it.
      const joinsTransaction = this.transactions.host.isTransactionActive();
      const outcome = await (route.phased ? this.phased : this.atomic).run(request);
      if (outcome.kind === 'replayed') {
        this.logger.debug(`key ${request.label} replayed (${outcome.response.statusCode})`);
        this.cache.set(request.id, request.requestHash, outcome.response, outcome.expiresInMs);
        report('replayed', outcome.response.statusCode);
        return await this.replay(context, request, outcome.response);
      }
      if (!joinsTransaction) {
        // The row expires its time to live after the claim, not after this slow or quick answer.
        const ttlMs = (route.ttlSeconds ?? this.options.ttlSeconds) * 1000;
        this.cache.set(request.id, request.requestHash, outcome.response, ttlMs - (performance.now() - started));
      }
      report(outcome.failed ? 'stored_failure' : 'completed', outcome.response.statusCode);
      return this.send(context, outcome.response);
    } catch (error) {
      if (error instanceof IdempotencyRejection) {
        this.logger.debug(`key ${request?.label ?? '-'} rejected: ${error.problem.title}`);
        report(error.reason, error.status);
        return this.reject(context, error);
      }
      report('released', error instanceof UnstoredOutcome ? error.response.statusCode : undefined);
      if (error instanceof UnstoredOutcome) return this.send(context, error.response);
      throw error;
    }
  }

  /** The key, scope, tenant and fingerprint; undefined when an optional key is absent. */
  private async describe(
    context: ExecutionContext,
    next: CallHandler,
    route: IdempotentOptions,
  ): Promise<IdempotentRequest | undefined> {
    const request = httpRequest(context);
    const { headerName, maxKeyLength } = this.options;
    const key = parseIdempotencyKey(request.headers[headerName.toLowerCase()], headerName, maxKeyLength);
    if (key === undefined) {
      if (route.required !== false) throw IdempotencyRejection.missingKey(headerName);
      return undefined;
    }
    const tenantId = (await this.options.tenantResolver(context)) ?? '';
    const pattern = routePattern(context, request);
    const scope = route.scope ?? `${request.method.toUpperCase()} ${pattern}`;
    const requestHash = requestFingerprint({
      method: request.method,
      route: pattern,
      params: request.params,
      query: request.query,
      body: bodyWithDefaults(context.getClass().prototype, context.getHandler() as never, request.body),
      headers: Object.fromEntries(
        this.options.fingerprintHeaders.map((name) => [name, headerValue(request, name)]),
      ),
    });
    return {
      context,
      next,
      route,
      serializeOptions: this.reflector.getAllAndOverride(CLASS_SERIALIZER_OPTIONS, [context.getHandler(), context.getClass()]),
      id: { tenantId, scope, key },
      requestHash,
      label: keyLabel(tenantId, scope, key),
    };
  }

  private async replay(context: ExecutionContext, request: IdempotentRequest, stored: StoredResponse): Promise<unknown> {
    const headers: Record<string, string> = {};
    if (this.options.markReplays) headers['idempotent-replayed'] = 'true';
    await this.options.onReplay?.({
      tenantId: request.id.tenantId,
      scope: request.id.scope,
      keyHash: request.label,
      response: stored,
      setHeader: (name, value) => {
        headers[name.toLowerCase()] = value;
      },
    });
    return this.send(context, stored, headers);
  }

  private reject(context: ExecutionContext, rejection: IdempotencyRejection): unknown {
    return this.send(context, {
      statusCode: rejection.status,
      headers: { ...rejection.headers, 'content-type': rejection.contentType },
      body: Buffer.from(JSON.stringify(rejection.problem), 'utf8'),
    });
  }

  /** Sets status and headers through the adapter (Express or Fastify); the router sends the body. */
  private send(context: ExecutionContext, stored: StoredResponse, extraHeaders: Record<string, string> = {}): unknown {
    const adapter = this.adapterHost.httpAdapter;
    const response = httpResponse(context);
    adapter.status(response, stored.statusCode);
    for (const [name, value] of Object.entries({ ...stored.headers, ...extraHeaders })) {
      adapter.setHeader(response, name, value as string); // arrays too (Set-Cookie): both adapters take them
    }
    return wireBody(stored);
  }
}
