import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { IdempotencyEvents } from '../events/idempotency-events';
import { resolveExistingKey, type StoredReplay } from '../existing-key';
import { settleHandler } from '../handler-outcome';
import { httpRequest } from '../http-exchange';
import { IDEMPOTENCY_OPTIONS } from '../idempotency.constants';
import type { ResolvedIdempotencyOptions } from '../idempotency.defaults';
import { IdempotencyRejection } from '../idempotency.errors';
import { IdempotencyKeyStore } from '../idempotency-key.store';
import type { IdempotentRequest, IdempotentRunner, Outcome } from '../idempotent-request';
import { ClaimConflictError, isSerializationFailure } from '../../shared/postgres-errors';
import { TransactionHostRef } from '../transaction-host.ref';
import { type IdempotentPhases, LeasedPhases } from './idempotent-phases';
import { LeaseLostError } from './lease-lost.error';
import type { LeaseClaim } from './lease.statements';
import { LeaseStore } from './lease.store';
import { PhasedInTransactionError } from './phased-in-transaction.error';
import { PHASES } from './phases.decorator';
import { RecordSealer } from '../sealing/record-sealer';
import { debugEnabled } from '../../shared/debug-enabled';

type LeaseOrReplay =
  | { claimed: true; lease: Extract<LeaseClaim, { claimed: true }> }
  | { claimed: false; replay: StoredReplay };

/**
 * The phased mode, for handlers that call other systems: the claim commits first, with a
 * lease; each phase commits its writes with its recovery point; the response is recorded last.
 * A crash leaves the key `in_progress` with the recovery points it reached: once the lease runs
 * out, a retry with the same request takes it over and resumes from there.
 */
@Injectable()
export class PhasedRunner implements IdempotentRunner {
  private readonly logger = new Logger('Idempotency');

  constructor(
    @Inject(IDEMPOTENCY_OPTIONS) private readonly options: ResolvedIdempotencyOptions,
    private readonly keys: IdempotencyKeyStore,
    private readonly leases: LeaseStore,
    private readonly transactions: TransactionHostRef,
    private readonly events: IdempotencyEvents,
    private readonly sealer: RecordSealer,
  ) {}

  async run(request: IdempotentRequest): Promise<Outcome> {
    const { id, route } = request;
    if (this.transactions.host.isTransactionActive()) {
      throw new PhasedInTransactionError(`phased request ${request.label}`);
    }
    const owner = randomUUID();
    const leaseSeconds = route.leaseSeconds ?? this.options.leaseSeconds;
    const claimStarted = performance.now();
    const claim = await this.claim(request, owner, leaseSeconds);
    if (!claim.claimed) return { kind: 'replayed', ...claim.replay };
    this.events.emit({
      type: 'claimed',
      scope: id.scope,
      mode: 'phased',
      claimMs: performance.now() - claimStarted,
    });
    if (claim.lease.recoveryPoint && debugEnabled(this.logger)) {
      this.logger.debug(
        `key ${request.label} resumed after recovery point ${claim.lease.recoveryPoint}`,
      );
    }

    const phases = new LeasedPhases({
      id,
      owner,
      leaseSeconds,
      generation: claim.lease.generation,
      recoveryPoint: claim.lease.recoveryPoint,
      stepState: claim.lease.stepState,
      startedSteps: claim.lease.startedSteps,
      leases: this.leases,
      events: this.events,
      txHost: this.transactions.host,
    });
    (httpRequest(request.context) as { [PHASES]?: IdempotentPhases })[PHASES] = phases;
    try {
      const { response, failed } = await settleHandler(request, this.options);
      if (!(await this.leases.completeLease(id, owner, response)))
        throw new LeaseLostError('finished');
      if (debugEnabled(this.logger)) {
        this.logger.debug(`key ${request.label} completed with ${response.statusCode}`);
      }
      return { kind: 'executed', response, failed };
    } catch (error) {
      if (error instanceof LeaseLostError) {
        this.logger.warn(`key ${request.label}: ${error.message}; another attempt owns it now`);
        throw IdempotencyRejection.keyInUse(this.options.retryAfterSeconds);
      }
      // Transient (or not stored): the recovery points stay, the lease ends now, so the
      // client's retry resumes at once instead of waiting for the lease to run out; or later,
      // when a step's call this attempt gave up on may still land (`inFlightSeconds`).
      const holdSeconds = phases.leaseHoldSeconds;
      const released = await this.leases
        .releaseLease(id, owner, holdSeconds)
        .catch((releaseError: unknown) => {
          this.logger.warn(
            `key ${request.label}: could not release the lease (${String(releaseError)})`,
          );
          return undefined;
        });
      // Under REPEATABLE READ or SERIALIZABLE a fenced write meets the takeover's update of the
      // row as a serialization failure, not as a row it did not match: the lease was lost.
      if (released === false && isSerializationFailure(error)) {
        this.logger.warn(`key ${request.label}: lease lost; another attempt owns it now`);
        throw IdempotencyRejection.keyInUse(this.options.retryAfterSeconds);
      }
      if (debugEnabled(this.logger)) {
        this.logger.debug(
          holdSeconds > 0
            ? `key ${request.label} keeps its lease ${holdSeconds} s after a failure: a call may still land`
            : `key ${request.label} released its lease after a failure`,
        );
      }
      throw error;
    }
  }

  private async claim(
    request: IdempotentRequest,
    owner: string,
    leaseSeconds: number,
  ): Promise<LeaseOrReplay> {
    const { id, requestHash, route } = request;
    const ttlSeconds = route.ttlSeconds ?? this.options.ttlSeconds;
    // The claim's and the expired row's removal's waits are bounded: past them, a 409.
    try {
      for (let attempt = 0; attempt < 2; attempt++) {
        const lease: LeaseClaim = await this.leases.claimLease(
          id,
          requestHash,
          ttlSeconds,
          leaseSeconds,
          owner,
          this.options.lockTimeoutMs,
        );
        if (lease.claimed) return { claimed: true, lease };
        const existing = await this.keys.read(id);
        if (!existing) continue;
        const resolution = resolveExistingKey(
          existing,
          requestHash,
          this.options.retryAfterSeconds,
          (recorded) => this.sealer.openResponse(id, recorded),
        );
        if (resolution !== 'expired') return { claimed: false, replay: resolution };
        await this.keys.deleteExpired(id, this.options.lockTimeoutMs);
      }
    } catch (error) {
      if (error instanceof ClaimConflictError)
        throw IdempotencyRejection.keyInUse(this.options.retryAfterSeconds, error.lockTimeout);
      throw error;
    }
    throw IdempotencyRejection.keyInUse(this.options.retryAfterSeconds);
  }
}
