import type { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { childKey } from './child-key';
import { bindCurrentOperation } from '../../shared/current-operation';
import type { KeyId } from '../key-id';
import { LeaseLostError } from './lease-lost.error';
import type { LeaseStore } from './lease.store';

/** What a phased request needs to record its recovery points. */
export interface PhasesContext {
  id: KeyId;
  owner: string;
  leaseSeconds: number;
  childKeyHeader: string;
  /** This claim of the key; part of every child key, see `childKey`. */
  generation: string;
  recoveryPoint: string | null;
  stepState: Record<string, unknown>;
  leases: LeaseStore;
  txHost: TransactionHost<TransactionalAdapterTypeOrm>;
}

/** Options of `phases.fetch`: a fetch `RequestInit` plus a timeout. */
export interface PhaseFetchInit extends RequestInit {
  /** Aborts the call after this many milliseconds (a transient failure: the lease is released). */
  timeoutMs?: number;
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
   * then records its result as the recovery point `name`. A crash in between runs `work` again
   * on the retry: make it idempotent downstream, with `childKey`/`fetch`.
   */
  abstract external<T>(name: string, work: () => Promise<T>): Promise<T>;

  /**
   * The key for the downstream call `step`: the same on every retry of this request, different
   * for another tenant or route using the same key, and for the same key claimed anew after it
   * expired (a new operation must not be deduplicated into the old one downstream).
   */
  abstract childKey(step: string): string;

  /** `fetch` that sends `childKey(step)` as the downstream idempotency key (never ours). */
  abstract fetch(step: string, url: string | URL, init?: PhaseFetchInit): Promise<Response>;
}

/** The phases of one attempt, under its lease: the phased runner makes one per request. */
export class LeasedPhases extends IdempotentPhases {
  private readonly committed: Record<string, unknown>;
  private lastPoint: string | null;

  constructor(private readonly context: PhasesContext) {
    super();
    this.committed = { ...context.stepState };
    this.lastPoint = context.recoveryPoint;
  }

  get recoveryPoint(): string | null {
    return this.lastPoint;
  }

  get resumed(): boolean {
    return this.context.recoveryPoint !== null;
  }

  async transaction<T>(name: string, work: () => Promise<T>): Promise<T> {
    if (name in this.committed) return this.committed[name] as T;
    const recorded = await this.context.txHost.withTransaction(async () => {
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
    return this.remember(name, recorded) as T;
  }

  async external<T>(name: string, work: () => Promise<T>): Promise<T> {
    if (name in this.committed) return this.committed[name] as T;
    const value = toJson(await work());
    await this.record(name, value);
    return this.remember(name, value) as T;
  }

  childKey(step: string): string {
    const { tenantId, scope, key } = this.context.id;
    return childKey(`${tenantId}\u0000${scope}\u0000${key}\u0000${this.context.generation}`, step);
  }

  fetch(step: string, url: string | URL, init: PhaseFetchInit = {}): Promise<Response> {
    const { timeoutMs, ...requestInit } = init;
    const headers = new Headers(requestInit.headers);
    headers.set(this.context.childKeyHeader, this.childKey(step));
    const signals = [
      requestInit.signal,
      timeoutMs === undefined ? undefined : AbortSignal.timeout(timeoutMs),
    ];
    const present = signals.filter((signal): signal is AbortSignal => !!signal);
    const signal = present.length > 1 ? AbortSignal.any(present) : present[0];
    return fetch(url, { ...requestInit, headers, signal });
  }

  private async record(name: string, value: unknown): Promise<void> {
    const { leases, id, owner, leaseSeconds } = this.context;
    if (!(await leases.recordStep(id, owner, name, value, leaseSeconds)))
      throw new LeaseLostError(name);
  }

  private remember(name: string, value: unknown): unknown {
    this.committed[name] = value;
    this.lastPoint = name;
    return value;
  }
}

/** The JSON copy of a step's result: what is stored, and what a resumed attempt gets back. */
function toJson(value: unknown): unknown {
  return value === undefined ? null : JSON.parse(JSON.stringify(value));
}
