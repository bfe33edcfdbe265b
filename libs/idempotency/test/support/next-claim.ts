import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { IDEMPOTENCY_DIAGNOSTICS_CHANNEL, type IdempotencyEvent } from 'nestjs-pg-idempotency';

/**
 * Resolves at the next key this process claims (the library's `claimed` event, on its
 * diagnostics channel). Called before a request is sent, it tells when that request holds its
 * key, so that a duplicate sent next finds it held, however slow the machine: a fixed head start
 * does not. Only one claim may be under way in the process when it is awaited.
 */
export function nextClaim(): Promise<void> {
  return new Promise((resolve) => {
    const listener = (message: unknown) => {
      if ((message as IdempotencyEvent).type !== 'claimed') return;
      unsubscribe(IDEMPOTENCY_DIAGNOSTICS_CHANNEL, listener);
      resolve();
    };
    subscribe(IDEMPOTENCY_DIAGNOSTICS_CHANNEL, listener);
  });
}
