import { Inject, Injectable, Logger } from '@nestjs/common';
import { bindCurrentOperation } from '../../shared/current-operation';
import { IdempotencyEvents } from '../events/idempotency-events';
import { resolveExistingKey, type StoredReplay } from '../existing-key';
import { settleHandler, UnstoredOutcome } from '../handler-outcome';
import { IDEMPOTENCY_OPTIONS } from '../idempotency.constants';
import type { ResolvedIdempotencyOptions } from '../idempotency.defaults';
import { IdempotencyRejection } from '../idempotency.errors';
import type { StoredResponse } from '../idempotency.options';
import {
  type ClaimResult,
  claimFailure,
  claimResultFrom,
  claimStatement,
  recordFailure,
  recordStatement,
  SAVEPOINT_STATEMENTS,
} from '../idempotency-key.statements';
import { IdempotencyKeyStore } from '../idempotency-key.store';
import type { IdempotentRequest, IdempotentRunner, Outcome } from '../idempotent-request';
import { ClaimConflictError } from '../../shared/postgres-errors';
import { RecordSealer } from '../sealing/record-sealer';
import { TransactionHostRef } from '../transaction-host.ref';
import { BatchedTransaction } from './batched-transaction';
import { CoalescedWrites } from './coalesced-writes';
import { PreparedStatements } from './prepared-statements';
import { debugEnabled } from '../../shared/debug-enabled';

/** How the transaction around the handler sends the claim and the record. */
interface ClaimedTransaction {
  /**
   * The claim's first attempt; the savepoint is taken with it when `savepointTaken`. A result
   * that came with START TRANSACTION is handed over as it is, without a promise.
   */
  firstClaim(): ClaimResult | Promise<ClaimResult>;
  savepointTaken: boolean;
  /**
   * Records the response; it commits with the handler's writes, or not at all. Returns nothing
   * when the record goes with the COMMIT, so there is nothing to wait for.
   */
  record(response: StoredResponse): Promise<void> | undefined;
  /** The claim found the key's committed outcome, having written nothing: no need to commit. */
  foundOutcome?(): void;
  /**
   * The claim ended without the key (a replay or a rejection) in a transaction that goes on
   * after the request: it gets back the `lock_timeout` the claim's bound replaced.
   */
  unclaimed?(): Promise<void>;
}

/** The key claimed (its generation, and whether the savepoint came with it), or a replay. */
type ClaimOutcome = StoredReplay | { generation: string; savepointTaken: boolean };

/**
 * The default mode: claim, handler writes and recorded response in ONE transaction. There is
 * no state in which the effect exists without its key row, or the key row without the effect.
 *
 * When no transaction is active yet, the runner opens it itself (`BatchedTransaction`): the
 * claim and the savepoint ride on START TRANSACTION and the record on COMMIT, so a create costs
 * the round trips of the handler alone plus none. Inside a transaction someone else opened, the
 * request joins it and each statement goes on its own.
 */
@Injectable()
export class AtomicRunner implements IdempotentRunner {
  private readonly logger = new Logger('Idempotency');
  private readonly prepared: PreparedStatements | undefined;
  private readonly coalescedWrites = new CoalescedWrites();

  constructor(
    @Inject(IDEMPOTENCY_OPTIONS) private readonly options: ResolvedIdempotencyOptions,
    private readonly store: IdempotencyKeyStore,
    private readonly transactions: TransactionHostRef,
    private readonly events: IdempotencyEvents,
    private readonly sealer: RecordSealer,
  ) {
    this.prepared = options.preparedStatements ? new PreparedStatements() : undefined;
  }

  run(request: IdempotentRequest): Promise<Outcome> {
    return this.inTransaction(request).catch((error: unknown) => {
      throw this.failure(request, error);
    });
  }

  /** What a failed run means to the caller: a lost race is a 409, the rest goes on as it is. */
  private failure(request: IdempotentRequest, error: unknown): unknown {
    if (error instanceof ClaimConflictError) {
      if (debugEnabled(this.logger)) {
        this.logger.debug(
          `key ${request.label} met a concurrent request (${error.lockTimeout ? 'lock timeout' : 'serialization failure'})`,
        );
      }
      return IdempotencyRejection.keyInUse(this.options.retryAfterSeconds, error.lockTimeout);
    }
    if (
      !(error instanceof IdempotencyRejection || error instanceof UnstoredOutcome) &&
      debugEnabled(this.logger)
    ) {
      this.logger.debug(`key ${request.label} released after a transient failure`);
    }
    return error;
  }

  private inTransaction(request: IdempotentRequest): Promise<Outcome> {
    const claimStarted = performance.now();
    const { id, requestHash } = request;
    const own = this.transactions.ownTransaction();
    if (!own) {
      return this.transactions.host.withTransaction(() =>
        this.execute(request, claimStarted, {
          firstClaim: () =>
            this.store.claim(id, requestHash, this.ttlSeconds(request), this.options.lockTimeoutMs),
          savepointTaken: false,
          record: (response) => this.store.record(id, this.sealer.sealResponse(id, response)),
          unclaimed: () => this.store.restoreLockTimeout(),
        }),
      );
    }
    const claim = claimStatement(
      id,
      requestHash,
      this.ttlSeconds(request),
      this.options.lockTimeoutMs,
    );
    return BatchedTransaction.run(
      own.dataSource,
      {
        isolationLevel: own.isolationLevel,
        prepared: this.prepared,
        coalescedWrites: this.coalescedWrites,
        afterStart: [claim, ...SAVEPOINT_STATEMENTS],
        startFailure: claimFailure,
      },
      (transaction, [claimRows]) =>
        this.transactions.runWith(transaction.manager, () =>
          this.execute(request, claimStarted, {
            firstClaim: () => claimResultFrom(claimRows ?? []),
            savepointTaken: true,
            // Sealed here, in JS; sent with the COMMIT, in the same round trip.
            record: (response) => {
              transaction.commitWith(
                [recordStatement(id, this.sealer.sealResponse(id, response))],
                recordFailure,
              );
              return undefined;
            },
            foundOutcome: () => transaction.endWithoutWaiting(),
          }),
        ),
    );
  }

  private async execute(
    request: IdempotentRequest,
    claimStarted: number,
    transaction: ClaimedTransaction,
  ): Promise<Outcome> {
    const { id } = request;
    const first = transaction.firstClaim();
    // The usual case, the key claimed by the statement sent with START TRANSACTION: no await.
    const claim =
      first instanceof Promise || !first.claimed
        ? await this.claimOrLeave(request, transaction, first)
        : { generation: first.generation, savepointTaken: transaction.savepointTaken };
    if ('response' in claim) return { kind: 'replayed', ...claim };
    // Lets the outbox derive stable message ids from this claim of the key (Outbox.publish).
    bindCurrentOperation({ kind: 'request', ...id, generation: claim.generation });
    this.events.emit({
      type: 'claimed',
      scope: request.eventScope ?? id.scope,
      mode: 'atomic',
      claimMs: performance.now() - claimStarted,
    });
    if (!claim.savepointTaken) await this.store.savepoint();
    const rollBack = () => this.store.rollbackToSavepoint();
    const { response, failed } = request.settle
      ? await request.settle(rollBack)
      : await settleHandler(request, this.options, rollBack);
    const recording = transaction.record(response);
    if (recording) await recording;
    if (debugEnabled(this.logger)) {
      this.logger.debug(`key ${request.label} completed with ${response.statusCode}`);
    }
    return { kind: 'executed', response, failed };
  }

  /** `claim`, then `unclaimed` when it replays or rejects (the transaction is still usable then). */
  private async claimOrLeave(
    request: IdempotentRequest,
    transaction: ClaimedTransaction,
    firstClaim: ClaimResult | Promise<ClaimResult>,
  ): Promise<ClaimOutcome> {
    if (!transaction.unclaimed) return this.claim(request, transaction, firstClaim);
    let claim: ClaimOutcome;
    try {
      claim = await this.claim(request, transaction, firstClaim);
    } catch (error) {
      if (error instanceof IdempotencyRejection) await transaction.unclaimed();
      throw error;
    }
    if ('response' in claim) await transaction.unclaimed();
    return claim;
  }

  /** Claims the key (its generation) or returns the response to replay; throws rejections. */
  private async claim(
    request: IdempotentRequest,
    transaction: ClaimedTransaction,
    firstClaim: ClaimResult | Promise<ClaimResult>,
  ): Promise<ClaimOutcome> {
    const { id, requestHash } = request;
    let result = await firstClaim;
    for (let attempt = 0; ; attempt++) {
      if (result.claimed)
        return {
          generation: result.generation,
          savepointTaken: attempt === 0 && transaction.savepointTaken,
        };
      // The twin committed while this claim waited on it: read it with a fresh snapshot.
      const existing = result.existing ?? (await this.store.read(id));
      if (existing) {
        const resolution = resolveExistingKey(
          existing,
          requestHash,
          this.options.retryAfterSeconds,
          (recorded) => this.sealer.openResponse(id, recorded),
        );
        if (resolution !== 'expired') {
          // A replay found by the first claim wrote nothing (ON CONFLICT DO NOTHING): a replay
          // from the database answers after one round trip. After a retry the expired row's
          // DELETE must commit, as usual.
          if (attempt === 0 && 'response' in resolution) transaction.foundOutcome?.();
          return resolution;
        }
        await this.store.deleteExpired(id, this.options.lockTimeoutMs);
      } // else: deleted in between (expiry cleanup): claim again
      if (attempt === 1) throw IdempotencyRejection.keyInUse(this.options.retryAfterSeconds);
      result = await this.store.claim(
        id,
        requestHash,
        this.ttlSeconds(request),
        this.options.lockTimeoutMs,
      );
    }
  }

  private ttlSeconds(request: IdempotentRequest): number {
    return request.route.ttlSeconds ?? this.options.ttlSeconds;
  }
}
