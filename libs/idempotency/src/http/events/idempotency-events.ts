import { channel } from 'node:diagnostics_channel';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { IDEMPOTENCY_OPTIONS } from '../idempotency.constants';
import type { ResolvedIdempotencyOptions } from '../idempotency.defaults';
import { IDEMPOTENCY_DIAGNOSTICS_CHANNEL, type IdempotencyEvent } from './idempotency-event';

// Module-level: Node keeps channels by name, and `hasSubscribers` is the cheap check that keeps
// an unobserved channel free.
const diagnostics = channel(IDEMPOTENCY_DIAGNOSTICS_CHANNEL);

/**
 * Hands each event to the app's `onEvent` hook and publishes it on `node:diagnostics_channel`,
 * so APM and OpenTelemetry instrumentations can subscribe without code in the app. A failing
 * hook is logged and ignored.
 */
@Injectable()
export class IdempotencyEvents {
  private readonly logger = new Logger('Idempotency');

  constructor(@Inject(IDEMPOTENCY_OPTIONS) private readonly options: ResolvedIdempotencyOptions) {}

  emit(event: IdempotencyEvent): void {
    const hook = this.options.onEvent;
    if (hook) {
      try {
        hook(event);
      } catch (error) {
        this.logger.warn(`onEvent hook failed: ${String(error)}`);
      }
    }
    // A subscriber that throws is Node's business: it reports the error on the next tick as
    // an uncaught exception, never here, so the request is not affected.
    if (diagnostics.hasSubscribers) diagnostics.publish(event);
  }
}
