import {
  type CallHandler,
  type ExecutionContext,
  HttpException,
  Inject,
  Injectable,
  Logger,
  type NestInterceptor,
} from '@nestjs/common';
import { HttpAdapterHost, Reflector } from '@nestjs/core';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { defer, lastValueFrom, type Observable } from 'rxjs';
import { bodyWithDefaults } from './body-defaults';
import { bindCurrentOperation } from './current-operation';
import { keyLabel, requestFingerprint } from './fingerprint';
import { headerValue, httpRequest, httpResponse, routePattern } from './http-exchange';
import { IDEMPOTENCY_OPTIONS, IDEMPOTENT_ROUTE } from './idempotency.constants';
import type { ResolvedIdempotencyOptions } from './idempotency.defaults';
import { IdempotencyRejection } from './idempotency.errors';
import type { IdempotentOptions, StoredResponse } from './idempotency.options';
import { parseIdempotencyKey } from './idempotency-key.parser';
import { IdempotencyKeyStore, type KeyId } from './idempotency-key.store';
import { isLockTimeout } from './postgres-errors';
import { captureFailure, captureResponse, wireBody } from './stored-response';

/** How a claimed request ended, decided inside the transaction. */
type Outcome =
  | { kind: 'executed'; response: StoredResponse }
  | { kind: 'replayed'; response: StoredResponse };

/** Rolls the whole transaction back but still sends the handler's response (not stored). */
class UnstoredOutcome extends Error {
  constructor(readonly response: StoredResponse) {
    super('outcome released');
  }
}

/**
 * The request flow of an `@Idempotent()` route: claim, execute, record, replay. Every SQL
 * statement lives in the store; this class only decides.
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  private readonly logger = new Logger('Idempotency');

  constructor(
    @Inject(IDEMPOTENCY_OPTIONS) private readonly options: ResolvedIdempotencyOptions,
    private readonly store: IdempotencyKeyStore,
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly reflector: Reflector,
    private readonly adapterHost: HttpAdapterHost,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const route = this.reflector.getAllAndOverride<IdempotentOptions | undefined>(IDEMPOTENT_ROUTE, [
      context.getHandler(),
      context.getClass(),
    ]);
    if (!route || context.getType() !== 'http') return next.handle();
    return defer(() => this.handle(context, next, route));
  }

  private async handle(
    context: ExecutionContext,
    next: CallHandler,
    route: IdempotentOptions,
  ): Promise<unknown> {
    try {
      const request = httpRequest(context);
      const { headerName, maxKeyLength } = this.options;
      const key = parseIdempotencyKey(request.headers[headerName.toLowerCase()], headerName, maxKeyLength);
      if (key === undefined) {
        if (route.required !== false) throw IdempotencyRejection.missingKey(headerName);
        return await lastValueFrom(next.handle(), { defaultValue: undefined });
      }
      const tenantId = (await this.options.tenantResolver(context)) ?? '';
      const pattern = routePattern(context, request);
      const id: KeyId = { tenantId, scope: route.scope ?? `${request.method.toUpperCase()} ${pattern}`, key };
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
      const outcome = await this.claimAndRun(context, next, id, requestHash, route);
      if (outcome.kind === 'replayed') return await this.replay(context, id, outcome.response);
      return this.send(context, outcome.response);
    } catch (error) {
      if (error instanceof IdempotencyRejection) return this.reject(context, error);
      if (error instanceof UnstoredOutcome) return this.send(context, error.response);
      throw error;
    }
  }

  private async claimAndRun(
    context: ExecutionContext,
    next: CallHandler,
    id: KeyId,
    requestHash: string,
    route: IdempotentOptions,
  ): Promise<Outcome> {
    const label = keyLabel(id.tenantId, id.scope, id.key);
    try {
      return await this.txHost.withTransaction(async () => {
        // Lets the outbox derive stable message ids from this key (see Outbox.publish).
        bindCurrentOperation({ kind: 'request', ...id });
        const replay = await this.claim(id, requestHash, route.ttlSeconds ?? this.options.ttlSeconds, label);
        if (replay) return { kind: 'replayed', response: replay };
        await this.store.savepoint();
        const response = await this.runHandler(context, next);
        await this.store.complete(id, response);
        this.logger.debug(`key ${label} completed with ${response.statusCode}`);
        return { kind: 'executed', response };
      });
    } catch (error) {
      if (isLockTimeout(error)) {
        this.logger.debug(`key ${label} is held by a running request (lock timeout)`);
        throw IdempotencyRejection.keyInUse(this.options.retryAfterSeconds);
      }
      if (!(error instanceof IdempotencyRejection || error instanceof UnstoredOutcome)) {
        this.logger.debug(`key ${label} released after a transient failure`);
      }
      throw error;
    }
  }

  /**
   * Claims the key, or returns the response to replay. Throws a rejection for a key in use or
   * reused with another request. An expired row counts as absent: its key is claimed anew.
   */
  private async claim(
    id: KeyId,
    requestHash: string,
    ttlSeconds: number,
    label: string,
  ): Promise<StoredResponse | undefined> {
    for (let attempt = 0; attempt < 2; attempt++) {
      const result = await this.store.claim(id, requestHash, ttlSeconds, this.options.lockTimeoutMs);
      if (result.claimed) return undefined;
      // The twin committed while this claim waited on it: read it with a fresh snapshot.
      const existing = result.existing ?? (await this.store.read(id));
      if (!existing) continue; // deleted in between (expiry cleanup): claim again
      if (existing.expired) {
        await this.store.deleteExpired(id);
        continue;
      }
      if (existing.requestHash !== requestHash) {
        this.logger.debug(`key ${label} reused with a different request`);
        throw IdempotencyRejection.keyReused();
      }
      if (existing.status === 'completed' && existing.response) return existing.response;
      throw IdempotencyRejection.keyInUse(this.options.retryAfterSeconds);
    }
    throw IdempotencyRejection.keyInUse(this.options.retryAfterSeconds);
  }

  /** Runs the handler; a stored failure is rolled back to the savepoint and recorded instead. */
  private async runHandler(context: ExecutionContext, next: CallHandler): Promise<StoredResponse> {
    const response = httpResponse(context);
    const { storedHeaders, shouldStore } = this.options;
    let captured: StoredResponse;
    try {
      // next.handle() binds the async context now: the handler joins this transaction.
      const value = await lastValueFrom(next.handle(), { defaultValue: undefined });
      captured = captureResponse(value, response, storedHeaders);
    } catch (error) {
      if (!(error instanceof HttpException) || !shouldStore(error.getStatus())) throw error;
      await this.store.rollbackToSavepoint();
      const rendered = this.options.renderException(error);
      return captureFailure(error, rendered, response, storedHeaders);
    }
    if (!shouldStore(captured.statusCode)) throw new UnstoredOutcome(captured);
    return captured;
  }

  private async replay(context: ExecutionContext, id: KeyId, stored: StoredResponse): Promise<unknown> {
    const headers: Record<string, string> = {};
    if (this.options.markReplays) headers['idempotent-replayed'] = 'true';
    await this.options.onReplay?.({
      tenantId: id.tenantId,
      scope: id.scope,
      keyHash: keyLabel(id.tenantId, id.scope, id.key),
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
  private send(
    context: ExecutionContext,
    stored: StoredResponse,
    extraHeaders: Record<string, string> = {},
  ): unknown {
    const adapter = this.adapterHost.httpAdapter;
    const response = httpResponse(context);
    adapter.status(response, stored.statusCode);
    for (const [name, value] of Object.entries({ ...stored.headers, ...extraHeaders })) {
      adapter.setHeader(response, name, value);
    }
    return wireBody(stored);
  }
}
