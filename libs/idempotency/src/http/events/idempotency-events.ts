import { Inject, Injectable, Logger } from '@nestjs/common';
import { IDEMPOTENCY_OPTIONS } from '../idempotency.constants';
import type { ResolvedIdempotencyOptions } from '../idempotency.defaults';
import type { IdempotencyEvent } from './idempotency-event';

/** Hands events to the app's `onEvent` hook; a failing hook never fails a request. */
@Injectable()
export class IdempotencyEvents {
  private readonly logger = new Logger('Idempotency');

  constructor(@Inject(IDEMPOTENCY_OPTIONS) private readonly options: ResolvedIdempotencyOptions) {}

  emit(event: IdempotencyEvent): void {
    const hook = this.options.onEvent;
    if (!hook) return;
    try {
      hook(event);
    } catch (error) {
      this.logger.warn(`onEvent hook failed: ${String(error)}`);
    }
  }
}
