import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { IDEMPOTENCY_OPTIONS } from '../idempotency.constants';
import type { ResolvedIdempotencyOptions } from '../idempotency.defaults';
import { PeriodicTask } from '../../shared/periodic-task';
import { IdempotencyCleanup } from './idempotency-cleanup';

/**
 * Runs the cleanup every `cleanup.intervalSeconds` inside the app. Several app processes may
 * all run it: SKIP LOCKED lets their batches pass each other instead of queueing. A timer of
 * its own instead of @nestjs/schedule keeps the library free of one more peer dependency.
 */
@Injectable()
export class CleanupScheduler implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Idempotency');
  private readonly task: PeriodicTask;

  constructor(
    @Inject(IDEMPOTENCY_OPTIONS) private readonly options: ResolvedIdempotencyOptions,
    cleanup: IdempotencyCleanup,
  ) {
    this.task = new PeriodicTask(
      (signal) => cleanup.purgeExpired({ signal }),
      (error) => this.logger.warn(`scheduled cleanup failed: ${String(error)}`),
    );
  }

  onApplicationBootstrap(): void {
    const { enabled, intervalSeconds } = this.options.cleanup;
    if (enabled) this.task.start(intervalSeconds * 1000);
  }

  onApplicationShutdown(): Promise<void> {
    return this.task.stop();
  }
}
