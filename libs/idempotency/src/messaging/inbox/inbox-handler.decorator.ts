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
  const metadata: InboxHandlerMetadata = { consumer, ...options };
  return applyDecorators(SetMetadata(INBOX_HANDLER, metadata), UseInterceptors(InboxInterceptor));
}
