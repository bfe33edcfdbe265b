import type { IdempotencyEventType } from './idempotency-event';
import type { IdempotencyEvents } from './idempotency-events';
import type { UnreadableRecordReason } from '../sealing/record-cipher';

/**
 * A request's outcome, reported as one event, once: an onReplay hook or a header that throws
 * after the outcome was reported must not report it a second time as released. `started` is
 * when the library took the request on.
 */
export class OutcomeReporter {
  readonly started = performance.now();
  private reported = false;

  constructor(
    private readonly events: IdempotencyEvents,
    private readonly scope: string,
    private readonly mode: 'atomic' | 'phased',
  ) {}

  report(type: IdempotencyEventType, statusCode?: number, reason?: UnreadableRecordReason): void {
    if (this.reported) return;
    this.reported = true;
    this.events.emit({
      type,
      scope: this.scope,
      mode: this.mode,
      statusCode,
      durationMs: performance.now() - this.started,
      ...(reason && { reason }),
    });
  }
}
