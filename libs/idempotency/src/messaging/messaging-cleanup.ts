import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { InboxStore } from './inbox/inbox.store';
import { OutboxStore } from './outbox/outbox.store';
import { drainInBatches, PeriodicTask } from '../shared/periodic-task';
import { MESSAGING_OPTIONS } from './messaging.constants';
import type { ResolvedMessagingOptions } from './messaging.defaults';

export interface CleanupResult {
  processedMessages: number;
  inboxFailures: number;
  outboxMessages: number;
  /** DELETE statements issued, each at most `cleanup.batchSize` rows. */
  batches: number;
}

/**
 * Retention: deletes processed ids and failure counts past `inbox.retentionSeconds` and sent
 * outbox rows past `outbox.retentionSeconds`, in bounded batches (short statements, short
 * locks), on a schedule in every process or on demand with `purge()`.
 */
export abstract class MessagingCleanup {
  /**
   * One bounded cleanup run: at most `cleanup.maxBatches` statements per table, fewer once
   * `signal` aborts (the scheduled run's, at shutdown).
   */
  abstract purge(signal?: AbortSignal): Promise<CleanupResult>;
}

/** The implementation Nest constructs; apps use `MessagingCleanup`. */
@Injectable()
export class MessagingCleanupService
  extends MessagingCleanup
  implements OnApplicationBootstrap, OnApplicationShutdown
{
  private readonly logger = new Logger('MessagingCleanup');
  private readonly task = new PeriodicTask(
    (signal) => this.purge(signal),
    (error) => this.logger.error(`cleanup failed: ${String(error)}`),
  );

  constructor(
    @Inject(MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    private readonly inboxStore: InboxStore,
    private readonly outboxStore: OutboxStore,
  ) {
    super();
  }

  onApplicationBootstrap(): void {
    const seconds = this.options.cleanup.intervalSeconds;
    if (seconds > 0) this.task.start(seconds * 1000);
  }

  onApplicationShutdown(): Promise<void> {
    return this.task.stop();
  }

  async purge(signal?: AbortSignal): Promise<CleanupResult> {
    const { inbox, outbox, cleanup } = this.options;
    const result: CleanupResult = {
      processedMessages: 0,
      inboxFailures: 0,
      outboxMessages: 0,
      batches: 0,
    };
    const drain = async (batch: () => Promise<number>): Promise<number> => {
      const { removed, batches } = await drainInBatches(
        batch,
        cleanup.batchSize,
        cleanup.maxBatches,
        signal,
      );
      result.batches += batches;
      return removed;
    };
    result.processedMessages = await drain(() =>
      this.inboxStore.purgeProcessed(inbox.retentionSeconds, cleanup.batchSize),
    );
    result.inboxFailures = await drain(() =>
      this.inboxStore.purgeFailures(inbox.retentionSeconds, cleanup.batchSize),
    );
    result.outboxMessages = await drain(() =>
      this.outboxStore.purgeSent(outbox.retentionSeconds, cleanup.batchSize),
    );
    return result;
  }
}
