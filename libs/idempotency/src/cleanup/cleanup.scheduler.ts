import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { IDEMPOTENCY_OPTIONS } from '../idempotency.constants';
import type { ResolvedIdempotencyOptions } from '../idempotency.defaults';
import { IdempotencyCleanup } from './idempotency-cleanup';

/**
 * Runs the cleanup every `cleanup.intervalSeconds` inside the app. Several app processes may
 * all run it: SKIP LOCKED lets their batches pass each other instead of queueing. A timer of
 * its own instead of @nestjs/schedule keeps the library free of one more peer dependency.
 */
@Injectable()
export class CleanupScheduler implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Idempotency');
  private timer?: NodeJS.Timeout;
  private running?: Promise<unknown>;

  constructor(
    @Inject(IDEMPOTENCY_OPTIONS) private readonly options: ResolvedIdempotencyOptions,
    private readonly cleanup: IdempotencyCleanup,
  ) {}

  onApplicationBootstrap(): void {
    const { enabled, intervalSeconds } = this.options.cleanup;
    if (!enabled) return;
    this.timer = setInterval(() => this.tick(), intervalSeconds * 1000);
    this.timer.unref(); // never keeps a process alive on its own
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  private tick(): void {
    if (this.running) return; // the previous run is still going: skip, do not pile up
    this.running = this.cleanup
      .purgeExpired()
      .catch((error: unknown) => this.logger.warn(`scheduled cleanup failed: ${String(error)}`))
      .finally(() => (this.running = undefined));
  }
}
