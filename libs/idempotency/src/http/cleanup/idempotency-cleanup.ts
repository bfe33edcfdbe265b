import { Inject, Injectable, Logger } from '@nestjs/common';
import { IdempotencyEvents } from '../events/idempotency-events';
import { IDEMPOTENCY_OPTIONS } from '../idempotency.constants';
import type { ResolvedIdempotencyOptions } from '../idempotency.defaults';
import { purgeExpiredStatement } from '../idempotency-key.statements';
import { drainInBatches } from '../../shared/periodic-task';
import { TransactionHostRef } from '../transaction-host.ref';

/** What one cleanup run removed. */
export interface CleanupReport {
  removed: number;
  batches: number;
  durationMs: number;
}

/**
 * Deletes keys past their time to live, in bounded batches: each batch is one short statement
 * that locks at most `batchSize` rows, skips rows another transaction holds (SKIP LOCKED), and
 * commits on its own, so the hot path never waits behind a long delete. A phased key whose lease
 * is live is never touched; an atomic claim in flight is uncommitted, hence invisible here.
 */
export abstract class IdempotencyCleanup {
  /**
   * One cleanup run: batches of `batchSize` (default `cleanup.batchSize`) until one removes
   * fewer, `maxBatches` ran (default: no limit) or `signal` aborts (the scheduler aborts it when
   * the app shuts down, so a backlog never holds up shutdown).
   */
  abstract purgeExpired(limits?: {
    batchSize?: number;
    maxBatches?: number;
    signal?: AbortSignal;
  }): Promise<CleanupReport>;
}

/** The implementation Nest constructs; apps use `IdempotencyCleanup`. */
@Injectable()
export class IdempotencyCleanupService extends IdempotencyCleanup {
  private readonly logger = new Logger('Idempotency');

  constructor(
    @Inject(IDEMPOTENCY_OPTIONS) private readonly options: ResolvedIdempotencyOptions,
    private readonly transactions: TransactionHostRef,
    private readonly events: IdempotencyEvents,
  ) {
    super();
  }

  async purgeExpired(
    limits: { batchSize?: number; maxBatches?: number; signal?: AbortSignal } = {},
  ): Promise<CleanupReport> {
    const batchSize = limits.batchSize ?? this.options.cleanup.batchSize;
    const maxBatches = limits.maxBatches ?? Number.POSITIVE_INFINITY;
    const started = performance.now();
    const { removed, batches } = await drainInBatches(
      async () => {
        const count = await this.deleteBatch(batchSize);
        if (count > 0) this.events.emit({ type: 'expired_removed', count });
        return count;
      },
      batchSize,
      maxBatches,
      limits.signal,
    );
    const report = { removed, batches, durationMs: Math.round(performance.now() - started) };
    if (removed > 0)
      this.logger.log(`cleanup removed ${removed} expired keys in ${batches} batches`);
    return report;
  }

  private async deleteBatch(batchSize: number): Promise<number> {
    const { text, values } = purgeExpiredStatement(batchSize);
    const rows: { removed: string }[] = await this.transactions.host.tx.query(text, [...values]);
    return Number(rows[0]?.removed ?? 0);
  }
}
