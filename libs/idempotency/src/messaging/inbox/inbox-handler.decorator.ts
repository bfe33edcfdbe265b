import { applyDecorators, SetMetadata, UseInterceptors } from '@nestjs/common';
import { INBOX_HANDLER } from '../messaging.constants';
import type { InboxHandlerMetadata, InboxHandlerOptions } from './inbox-handler.options';
import { InboxInterceptor } from './inbox.interceptor';

/**
 * Applies each message of a message handler once (`@EventPattern()` with manual acks): the
 * handler runs in one transaction with the claim of `(consumer, message id)`; the message is
 * acked after the commit, retried on a transient failure and dead-lettered when it has no id,
 * is unprocessable or keeps failing.
 *
 * `consumer` names the logical consumer, not the queue: keep it when the queue is renamed, or
 * every message already processed would be applied again.
 */
export function InboxHandler(consumer: string, options: InboxHandlerOptions = {}): MethodDecorator {
  if (!consumer) throw new Error('@InboxHandler() needs a consumer name');
  const { maxAttempts } = options;
  // 0 or less would dead-letter every first failure, NaN never: refused where it is written.
  if (maxAttempts !== undefined && (!Number.isInteger(maxAttempts) || maxAttempts <= 0)) {
    throw new Error(
      `@InboxHandler('${consumer}'): maxAttempts must be a positive integer, got ${String(maxAttempts)}`,
    );
  }
  const metadata: InboxHandlerMetadata = { consumer, ...options };
  return applyDecorators(SetMetadata(INBOX_HANDLER, metadata), UseInterceptors(InboxInterceptor));
}
