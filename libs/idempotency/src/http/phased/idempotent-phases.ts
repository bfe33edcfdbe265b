import type { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { childKey } from './child-key';
import type { IdempotencyEvents } from '../events/idempotency-events';
import { bindCurrentOperation } from '../../shared/current-operation';
import type { KeyId } from '../key-id';
import { LeaseLostError } from './lease-lost.error';
import { PhasedInTransactionError } from './phased-in-transaction.error';
import type { LeaseStore } from './lease.store';

/**
 * The header `phases.fetch` sends the child key in: the one payment APIs read (Stripe, Adyen,
 * the IETF draft), whatever header this app takes its own keys in (`headerName`).
 */
const CHILD_KEY_HEADER = 'Idempotency-Key';

/** What a phased request needs to record its recovery points. */
export interface PhasesContext {
  id: KeyId;
  owner: string;
  leaseSeconds: number;
  /** This claim of the key; part of every child key, see `childKey`. */
  generation: string;
  recoveryPoint: string | null;
  stepState: Record<string, unknown>;
  /** External steps an earlier attempt started; those without a result are uncertain. */
  startedSteps: readonly string[];
  leases: LeaseStore;
  events: IdempotencyEvents;
  txHost: TransactionHost<TransactionalAdapterTypeOrm>;
}

/** Options of `phases.fetch`: a fetch `RequestInit` plus a timeout. */
export interface PhaseFetchInit extends RequestInit {
  /** Aborts the call after this many milliseconds (a transient failure: the lease is released). */
  timeoutMs?: number;
}

/** Options of `phases.external`. */
export interface ExternalStepOptions<T> {
  /**
   * Learns the outcome of a call that may have happened: an earlier attempt started the step
   * and died (or failed) before recording its result. Look the call up in the other system, by
   * a reference you sent with it (your own id, or `childKey(step)`). Return what `work` would
   * have returned, which is then recorded as the step's result and `work` is not called; or
   * `undefined` when the other system has no trace of the call, and `work` runs. Called only on
   * an attempt that finds the step uncertain, never on a first attempt. Give it when the other
   * system ignores idempotency keys; a throw fails the attempt as a transient failure.
   */
  reconcile?: () => Promise<T | undefined>;
  /**
   * How long the other system may still carry out a call this attempt gave up on (a timeout, a
   * lost connection). After a failure that leaves this step uncertain, the lease is kept this
   * many seconds instead of ending at once: a retry meanwhile gets 409 with `Retry-After`, so it
   * reconciles (or calls again) only once a call still in flight would have landed. Give it
   * with `reconcile`, above the other system's longest processing time. Default 0.
   */
  inFlightSeconds?: number;
}

/**
 * The handler's side of a phased request (inject it with `@Phases()`). The handler runs from
 * the top on every attempt; each recovery point that an earlier attempt committed returns what
 * it recorded instead of running again. So call the phases in the same order every time, give
 * each a unique name, and let them return plain JSON (what you get back is the JSON copy, on
 * the first attempt as on a resumed one).
 */
export abstract class IdempotentPhases {
  /** The last recovery point committed for this key (`null` before the first). */
  abstract get recoveryPoint(): string | null;

  /** True when an earlier attempt had committed recovery points: this one resumes. */
  abstract get resumed(): boolean;

  /**
   * Runs `work` in a transaction and commits its writes together with the recovery point
   * `name` and its result. Writes through `txHost.tx` join that transaction.
   */
  abstract transaction<T>(name: string, work: () => Promise<T>): Promise<T>;

  /**
   * Runs `work` outside any transaction (a call to another system must not hold one open),
   * then records its result as the recovery point `name`. The step's start is recorded (one
   * statement) before `work` runs, so a step is in one of three states: never started (`work`
   * runs), recorded (its result is returned, `work` does not run) or uncertain: started by an
   * earlier attempt that died before recording the result. An uncertain step emits
   * `step_uncertain`; it calls `options.reconcile` first when given, and `work` only if that
   * finds nothing. Without `reconcile`, `work` runs again: make it idempotent downstream, with
   * `childKey`/`fetch`.
   */
  abstract external<T>(
    name: string,
    work: () => Promise<T>,
    options?: ExternalStepOptions<T>,
  ): Promise<T>;

  /**
   * The key for the downstream call `step`: the same on every retry of this request, different
   * for another tenant or route using the same key, and for the same key claimed anew after it
   * expired (a new operation must not be deduplicated into the old one downstream).
   */
  abstract childKey(step: string): string;

  /**
   * `fetch` that sends `childKey(step)` in the `Idempotency-Key` header (never the client's own
   * key), whatever `headerName` this app reads its keys from. For a service that wants its key
   * in another header, call `fetch` yourself with `childKey(step)` in that header.
   */
  abstract fetch(step: string, url: string | URL, init?: PhaseFetchInit): Promise<Response>;
}

/** The phases of one attempt, under its lease: the phased runner makes one per request. */
export class LeasedPhases extends IdempotentPhases {
  /** A Map: a step may be named as any property of an object (`constructor`, `__proto__`). */
  private readonly committed: Map<string, unknown>;
  private lastPoint: string | null;
  /** External steps whose call was made and whose result is not recorded: their `inFlightSeconds`. */
  private readonly inFlight = new Map<string, number>();
  /**
   * Steps recorded inside a transaction they joined (the handler's own, or another phase's):
   * they count once it commits, which only the row can tell after it ended (`recorded`).
   */
  private readonly joined = new Map<
    string,
    { value: unknown; transaction: unknown; previousPoint: string | null }
  >();

  constructor(private readonly context: PhasesContext) {
    super();
    this.committed = new Map(Object.entries(context.stepState));
    this.lastPoint = context.recoveryPoint;
  }

  get recoveryPoint(): string | null {
    return this.lastPoint;
  }

  get resumed(): boolean {
    return this.context.recoveryPoint !== null;
  }

  /**
   * How long the lease must outlive a failure of this attempt: the longest `inFlightSeconds` of
   * the external steps it left uncertain (0 when it left none).
   */
  get leaseHoldSeconds(): number {
    let seconds = 0;
    for (const held of this.inFlight.values()) seconds = Math.max(seconds, held);
    return seconds;
  }

  async transaction<T>(name: string, work: () => Promise<T>): Promise<T> {
    const found = await this.recorded(name);
    if (found) return found.value as T;
    const { txHost } = this.context;
    const joins = txHost.isTransactionActive();
    const recorded = await txHost.withTransaction(async () => {
      // Lets the outbox derive stable message ids from this key (see Outbox.publish).
      bindCurrentOperation({
        kind: 'request',
        ...this.context.id,
        generation: this.context.generation,
      });
      const value = toJson(await work());
      await this.record(name, value);
      return value;
    });
    if (!joins) return this.remember(name, recorded) as T;
    // The recovery point from now on, as the handler sees it; taken back if the row shows that
    // its transaction rolled back (`recorded`).
    this.joined.set(name, {
      value: recorded,
      transaction: txHost.tx,
      previousPoint: this.lastPoint,
    });
    this.lastPoint = name;
    return recorded as T;
  }

  async external<T>(
    name: string,
    work: () => Promise<T>,
    options: ExternalStepOptions<T> = {},
  ): Promise<T> {
    if (this.committed.has(name)) return this.committed.get(name) as T;
    const inFlightSeconds = options.inFlightSeconds ?? 0;
    if (!Number.isFinite(inFlightSeconds) || inFlightSeconds < 0) {
      throw new RangeError(
        `phases.external('${name}'): inFlightSeconds must be a number of seconds, 0 or more`,
      );
    }
    // The start must be committed before the call: inside the handler's own transaction it
    // would not be, and a rollback would forget a call that happened.
    if (this.context.txHost.isTransactionActive()) {
      throw new PhasedInTransactionError(`phases.external('${name}')`);
    }
    if (this.context.startedSteps.includes(name)) {
      const found = await this.settleUncertain(name, options.reconcile);
      if (found) return this.remember(name, found.value) as T;
    }
    // Fenced and renewing the lease, right before the call, on an uncertain step too: an
    // attempt that lost its lease while it reconciled must not call after its successor.
    const { leases, id, owner, leaseSeconds } = this.context;
    if (!(await leases.recordStepStart(id, owner, name, leaseSeconds)))
      throw new LeaseLostError(name);
    this.inFlight.set(name, inFlightSeconds);
    const value = toJson(await work());
    await this.record(name, value);
    this.inFlight.delete(name);
    return this.remember(name, value) as T;
  }

  childKey(step: string): string {
    const { tenantId, scope, key } = this.context.id;
    return childKey(`${tenantId}\u0000${scope}\u0000${key}\u0000${this.context.generation}`, step);
  }

  fetch(step: string, url: string | URL, init: PhaseFetchInit = {}): Promise<Response> {
    const { timeoutMs, ...requestInit } = init;
    const headers = new Headers(requestInit.headers);
    headers.set(CHILD_KEY_HEADER, this.childKey(step));
    const signals = [
      requestInit.signal,
      timeoutMs === undefined ? undefined : AbortSignal.timeout(timeoutMs),
    ];
    const present = signals.filter((signal): signal is AbortSignal => !!signal);
    const signal = present.length > 1 ? AbortSignal.any(present) : present[0];
    return fetch(url, { ...requestInit, headers, signal });
  }

  /** The outcome `reconcile` found for an uncertain step, recorded; undefined if none. */
  private async settleUncertain<T>(
    name: string,
    reconcile: ExternalStepOptions<T>['reconcile'],
  ): Promise<{ value: unknown } | undefined> {
    const { events, id } = this.context;
    events.emit({ type: 'step_uncertain', scope: id.scope, mode: 'phased', step: name });
    if (!reconcile) return undefined;
    const outcome = await reconcile();
    events.emit({
      type: 'step_reconciled',
      scope: id.scope,
      mode: 'phased',
      step: name,
      found: outcome !== undefined,
    });
    if (outcome === undefined) return undefined;
    const value = toJson(outcome);
    await this.record(name, value);
    return { value };
  }

  /**
   * The step's result if it committed, or was recorded in the transaction still open. One
   * recorded in a transaction it joined is looked up in the row each time: a savepoint rolled
   * back within the same transaction takes it away as surely as a rollback of the whole. Read in
   * another transaction, or in none, it is committed, and counted for good.
   */
  private async recorded(name: string): Promise<{ value: unknown } | undefined> {
    if (this.committed.has(name)) return { value: this.committed.get(name) };
    const joined = this.joined.get(name);
    if (!joined) return undefined;
    const { txHost, leases, id, owner } = this.context;
    const found = await leases.recordedStep(id, owner, name);
    if (!found) {
      this.joined.delete(name);
      if (this.lastPoint === name) this.lastPoint = joined.previousPoint;
      return undefined;
    }
    if (!txHost.isTransactionActive() || txHost.tx !== joined.transaction) {
      this.joined.delete(name);
      this.committed.set(name, found.value);
    }
    return found;
  }

  private async record(name: string, value: unknown): Promise<void> {
    const { leases, id, owner, leaseSeconds } = this.context;
    if (!(await leases.recordStep(id, owner, name, value, leaseSeconds)))
      throw new LeaseLostError(name);
  }

  private remember(name: string, value: unknown): unknown {
    this.committed.set(name, value);
    this.lastPoint = name;
    return value;
  }
}

/** The JSON copy of a step's result: what is stored, and what a resumed attempt gets back. */
function toJson(value: unknown): unknown {
  return value === undefined ? null : JSON.parse(JSON.stringify(value));
}
