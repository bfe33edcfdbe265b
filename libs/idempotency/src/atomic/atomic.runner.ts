import { Inject, Injectable, Logger } from '@nestjs/common';
import { bindCurrentOperation } from '../current-operation';
import { IdempotencyEvents } from '../events/idempotency-events';
import { resolveExistingKey, type StoredReplay } from '../existing-key';
import { settleHandler, UnstoredOutcome } from '../handler-outcome';
import { IDEMPOTENCY_OPTIONS } from '../idempotency.constants';
import type { ResolvedIdempotencyOptions } from '../idempotency.defaults';
import { IdempotencyRejection } from '../idempotency.errors';
import type { StoredResponse } from '../idempotency.options';
import { IdempotencyKeyStore } from '../idempotency-key.store';
import type { IdempotentRequest, IdempotentRunner, Outcome } from '../idempotent-request';
import { ClaimLockTimeoutError } from '../postgres-errors';
import { TransactionHostRef } from '../transaction-host.ref';

/**
 * The default mode: claim, handler writes and recorded response in ONE transaction. There is
 * no state in which the effect exists without its key row, or the key row without the effect.
 */
@Injectable()
export class AtomicRunner implements IdempotentRunner {
  private readonly logger = new Logger('Idempotency');

  constructor(
    @Inject(IDEMPOTENCY_OPTIONS) private readonly options: ResolvedIdempotencyOptions,
    private readonly store: IdempotencyKeyStore,
    private readonly transactions: TransactionHostRef,
    private readonly events: IdempotencyEvents,
  ) {}

  async run(request: IdempotentRequest): Promise<Outcome> {
    const { id, label } = request;
    try {
      return await this.transactions.host.withTransaction(async () => {
        const claimStarted = performance.now();
        const claim = await this.claim(request);
        if ('response' in claim) return { kind: 'replayed', ...claim };
        // Lets the outbox derive stable message ids from this claim of the key (Outbox.publish).
        bindCurrentOperation({ kind: 'request', ...id, generation: claim.generation });
        this.events.emit({ type: 'claimed', scope: id.scope, mode: 'atomic', claimMs: performance.now() - claimStarted });
        await this.store.savepoint();
        const { response, failed } = await settleHandler(request, this.options, () =>
          this.store.rollbackToSavepoint(),
        );
        await this.store.complete(id, response);
        this.logger.debug(`key ${label} completed with ${response.statusCode}`);
        return { kind: 'executed', response, failed };
      });
    } catch (error) {
      if (error instanceof ClaimLockTimeoutError) {
        this.logger.debug(`key ${label} is held by a running request (lock timeout)`);
        throw IdempotencyRejection.keyInUse(this.options.retryAfterSeconds, true);
      }
      if (!(error instanceof IdempotencyRejection || error instanceof UnstoredOutcome)) {
        this.logger.debug(`key ${label} released after a transient failure`);
      }
      throw error;
    }
  }

  /** Claims the key (its generation) or returns the response to replay; throws rejections. */
  private async claim(request: IdempotentRequest): Promise<StoredReplay | { generation: string }> {
    const { id, requestHash, route } = request;
    const ttlSeconds = route.ttlSeconds ?? this.options.ttlSeconds;
    for (let attempt = 0; attempt < 2; attempt++) {
      const result = await this.store.claim(id, requestHash, ttlSeconds, this.options.lockTimeoutMs);
      if (result.claimed) return { generation: result.generation };
      // The twin committed while this claim waited on it: read it with a fresh snapshot.
      const existing = result.existing ?? (await this.store.read(id));
      if (!existing) continue; // deleted in between (expiry cleanup): claim again
      const resolution = resolveExistingKey(existing, requestHash, this.options.retryAfterSeconds);
      if (resolution !== 'expired') return resolution;
      await this.store.deleteExpired(id);
    }
    throw IdempotencyRejection.keyInUse(this.options.retryAfterSeconds);
  }
}
