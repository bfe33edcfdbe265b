import {
  type CallHandler,
  type ExecutionContext,
  Inject,
  Injectable,
  Logger,
  type NestInterceptor,
  Optional,
} from '@nestjs/common';
import { ApplicationConfig, HttpAdapterHost, Reflector } from '@nestjs/core';
import { lastValueFrom, type Observable, throwError } from 'rxjs';
import { AtomicRunner } from './atomic/atomic.runner';
import { atCheckPhase } from './delivered';
import { IdempotencyEvents } from './events/idempotency-events';
import { OutcomeReporter } from './events/outcome-reporter';
import { GraphqlMutationFlow, mutationField } from './graphql/graphql-mutation.flow';
import { HttpRequestFlow } from './http-request.flow';
import { UnstoredOutcome } from './handler-outcome';
import { httpRequest, routePattern } from './http-exchange';
import { IDEMPOTENCY_OPTIONS } from './idempotency.constants';
import type { ResolvedIdempotencyOptions } from './idempotency.defaults';
import { IdempotencyRejection } from './idempotency.errors';
import { isOutermostInterceptor } from './outermost-interceptor';
import { withSerializerDefaults } from './serializer-options';
import type { StoredResponse } from './idempotency.options';
import type { IdempotentRequest, Outcome } from './idempotent-request';
import { PhasedRunner } from './phased/phased.runner';
import { isDatabaseUnavailable, isMissingKeyTable } from '../shared/postgres-errors';
import { CompletedResponseCache } from './replay/completed-response.cache';
import { type Flight, InFlightKeys, type Landing } from './replay/in-flight-keys';
import { keyIdentity } from './replay/key-identity';
import type { Delivery, RequestFlow } from './request-flow';
import { type RouteOptions, routeOptions } from './route-options';
import { routeVariant } from './route-variant';
import { copyOfStored } from './stored-response';
import { TransactionHostRef } from './transaction-host.ref';
import { debugEnabled } from '../shared/debug-enabled';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Requests (a GraphQL field's `info`) an idempotency run has taken on; weak, so a finished
 * request leaves no trace.
 */
const RUNNING = new WeakSet<object>();

/**
 * An `@Idempotent()` route or mutation: its flow (`HttpRequestFlow`, `GraphqlMutationFlow`)
 * reads the key, the tenant and the fingerprint and sends what was decided; in between, this
 * class answers from the replay cache or a twin in flight, or hands the request to its mode
 * (atomic or phased), and reports the outcome. No SQL here.
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  private readonly logger = new Logger('Idempotency');
  private missingTableSaid = false;

  constructor(
    @Inject(IDEMPOTENCY_OPTIONS) private readonly options: ResolvedIdempotencyOptions,
    private readonly atomic: AtomicRunner,
    private readonly phased: PhasedRunner,
    private readonly reflector: Reflector,
    private readonly adapterHost: HttpAdapterHost,
    private readonly events: IdempotencyEvents,
    private readonly cache: CompletedResponseCache,
    private readonly inFlight: InFlightKeys,
    private readonly transactions: TransactionHostRef,
    // Every Nest module provides it; optional, so a hand-built interceptor works without it.
    @Optional() private readonly appConfig?: ApplicationConfig,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const type = context.getType<string>();
    if (type === 'graphql') return this.interceptField(context, next);
    if (type !== 'http') return next.handle();
    const declared = routeOptions(
      this.reflector,
      context.getClass(),
      context.getHandler() as never,
    );
    if (!declared) return next.handle();
    const request = httpRequest(context);
    // Safe methods are idempotent by HTTP semantics: a class-level @Idempotent() leaves them be.
    if (SAFE_METHODS.has(request.method.toUpperCase())) return next.handle();
    // The decorator on a class and on its method, or a global interceptor beside it, attach this
    // interceptor twice: the inner one would find the outer one's claim and answer 409 for ever.
    if (RUNNING.has(request)) return next.handle();
    RUNNING.add(request);
    const handler = context.getHandler() as never;
    const route = withSerializerDefaults(
      this.appConfig,
      this.reflector,
      context.getClass(),
      handler,
      declared,
    );
    const pattern = routePattern(context, request);
    const scope = route.scope ?? `${request.method.toUpperCase()} ${pattern}`;
    const outermost = isOutermostInterceptor(
      this.appConfig,
      this.reflector,
      context.getClass(),
      handler,
      IdempotencyInterceptor,
    );
    return this.run(
      next,
      route,
      new HttpRequestFlow(
        context,
        next,
        route,
        request,
        pattern,
        routeVariant(this.appConfig, context.getClass(), handler),
        scope,
        this.options,
        this.adapterHost,
        outermost,
      ),
    );
  }

  /**
   * A field of a GraphQL mutation (queries and subscriptions are left alone): the same flow,
   * with the key read from the HTTP request carrying the operation. Atomic mode only.
   */
  private interceptField(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const route = routeOptions(this.reflector, context.getClass(), context.getHandler() as never);
    const info = route && mutationField(context);
    if (!route || !info || RUNNING.has(info)) return next.handle();
    RUNNING.add(info);
    if (route.phased) {
      return throwError(
        () =>
          new Error(
            `@Idempotent({ phased: true }) on ${context.getClass().name}.${context.getHandler().name}: ` +
              'the phased mode does not serve GraphQL mutations; use the atomic mode',
          ),
      );
    }
    return this.run(next, route, new GraphqlMutationFlow(context, next, route, info, this.options));
  }

  /** Runs the flow; a delivered error is thrown only here, past the flow's own error handling. */
  private run(next: CallHandler, route: RouteOptions, flow: RequestFlow): Observable<unknown> {
    // A replay from the replay cache is decided at subscription, without a promise. Every
    // answer goes out in the check phase of the turn that decided it (`atCheckPhase`).
    return atCheckPhase(() => this.handle(next, route, flow));
  }

  /**
   * The request up to the replay cache, synchronously unless the tenant resolver returns a
   * promise: a replay found there is decided at once; everything else goes on in `proceed`.
   */
  private handle(
    next: CallHandler,
    route: RouteOptions,
    flow: RequestFlow,
  ): Delivery | Promise<Delivery> {
    const reporter = new OutcomeReporter(
      this.events,
      flow.eventScope,
      route.phased ? 'phased' : 'atomic',
    );
    try {
      const described = flow.describe();
      return described instanceof Promise
        ? described.then(
            (request) => this.fromCache(next, route, flow, reporter, request),
            (error: unknown) => this.failed(flow, reporter, undefined, error),
          )
        : this.fromCache(next, route, flow, reporter, described);
    } catch (error) {
      return this.failed(flow, reporter, undefined, error);
    }
  }

  /**
   * A request without a key goes to the handler as it is; a key the replay cache holds is
   * answered from it (a promise only when an `onReplay` hook returns one).
   */
  private fromCache(
    next: CallHandler,
    route: RouteOptions,
    flow: RequestFlow,
    reporter: OutcomeReporter,
    request: IdempotentRequest | undefined,
  ): Delivery | Promise<Delivery> {
    try {
      // No key, no idempotency: the handler's errors go to the app's filters as they are, with
      // no event about a key that never existed.
      if (!request) {
        return lastValueFrom(next.handle(), { defaultValue: undefined }).then(
          (value: unknown) => ({ value }),
          (error: unknown) => ({ error }),
        );
      }
      const cached = this.cache.get(request.id);
      if (!cached) {
        // Fingerprinted here, before anything is claimed: a body without one gets its 400 now.
        void request.requestHash;
        return this.proceed(route, flow, reporter, request);
      }
      if (!CompletedResponseCache.answers(cached, request)) throw IdempotencyRejection.keyReused();
      reporter.report('replayed', cached.response.statusCode);
      const replayed = this.replayed(flow, request, cached.response);
      return replayed instanceof Promise
        ? replayed.catch((error: unknown) => this.failed(flow, reporter, request, error))
        : replayed;
    } catch (error) {
      return this.failed(flow, reporter, request, error);
    }
  }

  /** Everything past the replay cache: the in-memory wait, the run, the recorded outcome. */
  private async proceed(
    route: RouteOptions,
    flow: RequestFlow,
    reporter: OutcomeReporter,
    request: IdempotentRequest,
  ): Promise<Delivery> {
    const { started } = reporter;
    try {
      // Inside the app's own transaction, a fresh outcome is not committed yet when it comes
      // back: that transaction may still roll back, so only the database may replay it.
      const joinsTransaction = this.transactions.host.isTransactionActive();
      // A phased claim commits at once, so its duplicates never wait on a row lock.
      const coalesce = !route.phased && !joinsTransaction;
      let flight: Flight | { replay: StoredResponse } | undefined;
      if (coalesce) {
        const led = this.lead(request);
        flight = led instanceof Promise ? await led : led;
      }
      if (flight && 'replay' in flight) {
        reporter.report('replayed', flight.replay.statusCode);
        const replayed = this.replayed(flow, request, flight.replay);
        return replayed instanceof Promise ? await replayed : replayed;
      }
      let outcome: Outcome;
      try {
        outcome = await (route.phased ? this.phased : this.atomic).run(request);
      } catch (error) {
        flight?.land({ committed: false });
        throw error;
      }
      const ttlMs = (route.ttlSeconds ?? this.options.ttlSeconds) * 1000;
      // The row expires its time to live after the claim, not after this slow or quick answer.
      const expiresInMs =
        outcome.kind === 'replayed' ? outcome.expiresInMs : ttlMs - (performance.now() - started);
      flight?.land({
        committed: true,
        requestHash: request.requestHash,
        response: outcome.response,
      });
      if (outcome.kind === 'replayed') {
        if (debugEnabled(this.logger)) {
          this.logger.debug(`key ${request.label} replayed (${outcome.response.statusCode})`);
        }
        this.remember(request, outcome.response, expiresInMs);
        reporter.report('replayed', outcome.response.statusCode);
        const replayed = this.replayed(flow, request, outcome.response);
        return replayed instanceof Promise ? await replayed : replayed;
      }
      if (!joinsTransaction) this.remember(request, outcome.response, expiresInMs);
      reporter.report(outcome.failed ? 'stored_failure' : 'completed', outcome.response.statusCode);
      return flow.deliver(outcome.response);
    } catch (error) {
      return this.failed(flow, reporter, request, error);
    }
  }

  /** Keeps a committed outcome in the replay cache, with the text of the request it answers. */
  private remember(
    request: IdempotentRequest,
    response: StoredResponse,
    expiresInMs: number,
  ): void {
    this.cache.set(request.id, request.requestHash, response, expiresInMs, request.verbatim);
  }

  /** What a failure of the request means to its client: a problem, a response, or the error. */
  private failed(
    flow: RequestFlow,
    reporter: OutcomeReporter,
    request: IdempotentRequest | undefined,
    error: unknown,
  ): Delivery {
    if (error instanceof IdempotencyRejection) {
      if (debugEnabled(this.logger)) {
        this.logger.debug(`key ${request?.label ?? '-'} rejected: ${error.problem.title}`);
      }
      reporter.report(error.reason, error.status, error.unreadableReason);
      return flow.reject(error);
    }
    if (isDatabaseUnavailable(error)) {
      this.logger.warn(
        `key ${request?.label ?? '-'} released: the database could not be reached (${String(error)})`,
      );
      const unavailable = IdempotencyRejection.databaseUnavailable(this.options.retryAfterSeconds);
      reporter.report('released', unavailable.status);
      return flow.reject(unavailable);
    }
    if (isMissingKeyTable(error) && !this.missingTableSaid) {
      // Said once: every request with a key fails the same way until the migrations run.
      this.missingTableSaid = true;
      this.logger.error(
        'the table idempotency_keys does not exist: add idempotencyMigrations to your ' +
          "DataSource's migrations and run them (the package README's quick start)",
      );
    }
    reporter.report(
      'released',
      error instanceof UnstoredOutcome ? error.response.statusCode : undefined,
    );
    if (error instanceof UnstoredOutcome) return flow.deliver(error.response);
    return flow.released(error);
  }

  /**
   * Makes this request the key's only attempt in this process, waiting in memory (bounded by
   * `lockTimeoutMs`) while a twin runs: then replays the twin's committed outcome, or leads once
   * the twin released the key. A twin in another process is met by the claim's row lock instead.
   */
  private lead(request: IdempotentRequest): Flight | Promise<Flight | { replay: StoredResponse }> {
    const identity = keyIdentity(request.id);
    const taken = this.inFlight.take(identity);
    // The usual case, no twin: decided without a promise.
    return 'flight' in taken ? taken.flight : this.followTwin(request, identity, taken.twin);
  }

  /** Waits for the running twin to land, and leads once it released the key. */
  private async followTwin(
    request: IdempotentRequest,
    identity: string,
    twin: Promise<Landing>,
  ): Promise<Flight | { replay: StoredResponse }> {
    const deadline = performance.now() + this.options.lockTimeoutMs;
    for (let running = twin; ;) {
      const landing = await InFlightKeys.waitAtMost(running, deadline - performance.now());
      if (!landing) throw IdempotencyRejection.keyInUse(this.options.retryAfterSeconds, true);
      if (landing.committed) {
        if (landing.requestHash !== request.requestHash) throw IdempotencyRejection.keyReused();
        return { replay: landing.response };
      }
      const taken = this.inFlight.take(identity);
      if ('flight' in taken) return taken.flight;
      running = taken.twin;
    }
  }

  /**
   * The replay's delivery; a promise only when an `onReplay` hook is set. Callers await it only
   * when it is one: `await` on a plain value costs a promise too.
   */
  private replayed(
    flow: RequestFlow,
    request: IdempotentRequest,
    stored: StoredResponse,
  ): Delivery | Promise<Delivery> {
    const headers: Record<string, string> = {};
    if (this.options.markReplays) headers['idempotent-replayed'] = 'true';
    const onReplay = this.options.onReplay;
    if (!onReplay) return flow.deliver(stored, headers);
    const hooked = onReplay({
      tenantId: request.id.tenantId,
      scope: request.id.scope,
      keyHash: request.label,
      // A copy: `stored` may be the replay cache's entry, which a hook must not change for the
      // replays after this one (headers go through setHeader).
      response: copyOfStored(stored),
      setHeader: (name, value) => {
        headers[name.toLowerCase()] = value;
      },
    });
    return Promise.resolve(hooked).then(() => flow.deliver(stored, headers));
  }
}
