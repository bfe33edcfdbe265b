import { ClsServiceManager } from 'nestjs-cls';
import type { ResolvedIdempotencyOptions } from '../idempotency.defaults';
import { IdempotencyRejection } from '../idempotency.errors';
import type { IdempotentRequest } from '../idempotent-request';
import { runThen } from '../../shared/run-then';

const GUARDED_REQUEST = Symbol('idempotency:guarded-request');

/**
 * One run of an `@Idempotent()` handler whose TypeORM writes must go through the transaction
 * its async context holds (see `WriteGuardSubscriber`). Bound to that context while the handler
 * runs, so the check costs one context lookup per write and nothing per request beyond the
 * binding.
 */
export class GuardedRequest {
  private refusal?: IdempotencyRejection;
  private watching = true;

  private constructor(
    readonly scope: string,
    readonly mode: 'atomic' | 'phased',
    readonly action: 'throw' | 'warn',
  ) {}

  /** The request's guard, or undefined when its route (or the module) turned it off. */
  static of(
    request: IdempotentRequest,
    options: ResolvedIdempotencyOptions,
  ): GuardedRequest | undefined {
    const action = request.route.writeGuard ?? options.writeGuard;
    if (action === 'off') return undefined;
    // The scope events carry: a GraphQL field's record scope ends in its client-chosen alias.
    const scope = request.eventScope ?? request.id.scope;
    return new GuardedRequest(scope, request.route.phased ? 'phased' : 'atomic', action);
  }

  /** The guard of the handler running in this async context, if any. */
  static current(): GuardedRequest | undefined {
    const cls = ClsServiceManager.getClsService();
    if (!cls.isActive()) return undefined;
    const guard = cls.get<GuardedRequest | undefined>(GUARDED_REQUEST);
    // A timer or callback the handler left behind keeps the context after the handler returned:
    // its writes come after the outcome was decided, where refusing them decides nothing.
    return guard?.watching ? guard : undefined;
  }

  /**
   * Runs the handler with this guard bound to its async context. The atomic mode calls it in
   * the child context of its transaction; the phased mode in the request's own context, so the
   * previous value is put back afterwards.
   */
  watch<T>(handler: () => Promise<T>): Promise<T> {
    const cls = ClsServiceManager.getClsService();
    if (!cls.isActive()) return cls.run(() => this.watch(handler));
    const previous = cls.get<GuardedRequest | undefined>(GUARDED_REQUEST);
    cls.set(GUARDED_REQUEST, this);
    return runThen(handler, () => {
      this.watching = false;
      cls.set(GUARDED_REQUEST, previous);
    });
  }

  /** Remembers the first refused write: the request fails even if the handler swallows it. */
  refuse(entity: string): IdempotencyRejection {
    const rejection = IdempotencyRejection.writeOutsideTransaction(entity, this.scope);
    this.refusal ??= rejection;
    return rejection;
  }

  /** Throws the first refusal, whatever the handler did with it. */
  assertNoWriteRefused(): void {
    if (this.refusal) throw this.refusal;
  }
}
