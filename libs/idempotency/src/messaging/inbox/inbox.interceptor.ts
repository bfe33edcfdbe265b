import { errorText } from '../../shared/error-text';
import {
  type CallHandler,
  type ExecutionContext,
  Inject,
  Injectable,
  Logger,
  type NestInterceptor,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { defer, lastValueFrom, type Observable } from 'rxjs';
import { MESSAGING_OPTIONS, INBOX_HANDLER } from '../messaging.constants';
import type { ResolvedMessagingOptions } from '../messaging.defaults';
import type { InboxSettlement } from '../messaging.options';
import type { DeadLetterReason, InboxDelivery } from '../messaging-transport';
import type { InboxHandlerMetadata } from './inbox-handler.options';
import {
  MessageInFlightError,
  MissingMessageIdError,
  UnprocessableMessageError,
} from './inbox.errors';
import { Inbox } from './inbox.service';
import { InboxStore } from './inbox.store';

/**
 * The delivery flow of an `@InboxHandler()`: process through the inbox, then tell the broker.
 * Nothing is acknowledged before COMMIT; every error ends in exactly one of retry or
 * dead-letter, so no delivery is left unsettled and none is dropped silently.
 */
@Injectable()
export class InboxInterceptor implements NestInterceptor {
  private readonly logger = new Logger('Inbox');

  constructor(
    @Inject(MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    private readonly inbox: Inbox,
    private readonly reflector: Reflector,
    private readonly store: InboxStore,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const handler = this.reflector.get<InboxHandlerMetadata | undefined>(
      INBOX_HANDLER,
      context.getHandler(),
    );
    if (!handler) return next.handle();
    return defer(() => this.handle(context, next, handler));
  }

  private async handle(
    context: ExecutionContext,
    next: CallHandler,
    handler: InboxHandlerMetadata,
  ): Promise<undefined> {
    const { consumer } = handler;
    const delivery = this.options.transport?.delivery?.(context, consumer);
    if (!delivery) {
      throw new Error(
        `@InboxHandler('${consumer}'): the messaging transport does not recognise this ${context.getType()} context`,
      );
    }
    let status: 'applied' | 'duplicate';
    try {
      if (delivery.unreadableMessageId !== undefined)
        throw new MissingMessageIdError(delivery.unreadableMessageId);
      // next.handle() binds the async context now: the handler joins the inbox transaction.
      const outcome = await this.inbox.process(consumer, delivery.messageId, () =>
        lastValueFrom(next.handle(), { defaultValue: undefined }),
      );
      status = outcome.status;
    } catch (error) {
      await this.settleFailure(delivery, handler, error);
      return undefined;
    }
    if (status === 'duplicate')
      this.logger.debug(`${consumer}: ${delivery.messageId} already processed, skipped`);
    await this.report({
      consumer,
      messageId: delivery.messageId,
      status,
      headers: delivery.headers,
    });
    // A crash or a lost channel before this line leaves the message unacked: the broker delivers
    // it again and the claim above turns that delivery into a duplicate.
    await this.tell('ack', consumer, () => delivery.ack());
    return undefined;
  }

  private async settleFailure(
    delivery: InboxDelivery,
    handler: InboxHandlerMetadata,
    error: unknown,
  ): Promise<void> {
    const { consumer } = handler;
    const { messageId, headers } = delivery;
    if (error instanceof MissingMessageIdError) {
      return this.deadLetter(delivery, {
        code: 'missing-message-id',
        consumer,
        detail: error.message,
        attempts: 0,
      });
    }
    if (error instanceof UnprocessableMessageError) {
      return this.deadLetter(delivery, {
        code: 'unprocessable',
        consumer,
        detail: error.message,
        attempts: 0,
      });
    }
    if (error instanceof MessageInFlightError) {
      // A twin holds the claim: not this message's failure, so no attempt is counted (a
      // redelivery racing a slow handler must not end on the dead-letter queue).
      this.logger.warn(
        `${consumer}: ${messageId} is being processed by another delivery; retrying later`,
      );
      await sleep(this.options.inbox.retryDelayMs);
      await this.report({ consumer, messageId, status: 'retried', headers });
      return this.tell('retry', consumer, () => delivery.retry());
    }
    let attempts: number;
    try {
      attempts = await this.inbox.recordFailure(consumer, messageId as string, error);
    } catch (countError) {
      // Cannot count (the database is down, most likely): retrying is the only safe move.
      this.logger.error(
        `${consumer}: ${messageId} failed and its attempt could not be counted: ${errorText(countError)}`,
      );
      await this.report({ consumer, messageId, status: 'retried', headers });
      return this.tell('retry', consumer, () => delivery.retry());
    }
    const maxAttempts = handler.maxAttempts ?? this.options.inbox.maxAttempts;
    if (attempts >= maxAttempts) {
      return this.deadLetter(delivery, {
        code: 'max-attempts',
        consumer,
        detail: `failed ${attempts} times; last error: ${errorText(error)}`,
        attempts,
      });
    }
    this.logger.warn(
      `${consumer}: ${messageId} failed (attempt ${attempts} of ${maxAttempts}), retrying: ${errorText(error)}`,
    );
    await sleep(Math.min(this.options.inbox.retryDelayMs * attempts, 10_000));
    await this.report({ consumer, messageId, status: 'retried', headers, attempts });
    await this.tell('retry', consumer, () => delivery.retry());
  }

  private async deadLetter(delivery: InboxDelivery, reason: DeadLetterReason): Promise<void> {
    this.logger.warn(
      `${reason.consumer}: dead-lettering ${delivery.messageId ?? '(no id)'} (${reason.code}): ${reason.detail}`,
    );
    const settlement = {
      consumer: reason.consumer,
      messageId: delivery.messageId,
      headers: delivery.headers,
      attempts: reason.attempts,
    };
    try {
      await delivery.deadLetter(reason);
    } catch (error) {
      // The copy did not reach the dead-letter queue: keep the original rather than lose it.
      this.logger.error(
        `${reason.consumer}: dead-lettering failed, retrying instead: ${errorText(error)}`,
      );
      await this.report({ ...settlement, status: 'retried' });
      await this.tell('retry', reason.consumer, () => delivery.retry());
      return;
    }
    // Reported once the copy is safe: a failed copy is a retry, not a dead letter.
    await this.report({ ...settlement, status: 'dead-lettered' });
    // Not for a missing id: there is no usable id to mark.
    if (reason.code !== 'missing-message-id' && delivery.messageId !== undefined) {
      // Moved back from the dead-letter queue once fixed, it starts its count afresh.
      await this.store
        .markDeadLettered(reason.consumer, delivery.messageId)
        .catch((error: unknown) =>
          this.logger.warn(
            `${reason.consumer}: the failures of ${delivery.messageId} stay counted: ${errorText(error)}`,
          ),
        );
    }
  }

  private async report(settlement: InboxSettlement): Promise<void> {
    try {
      await this.options.inbox.onSettle?.(settlement);
    } catch (error) {
      this.logger.error(`inbox.onSettle threw: ${errorText(error)}`);
    }
  }

  /** A failed ack or nack means the channel is gone; the broker redelivers, the claim dedupes. */
  private async tell(
    what: string,
    consumer: string,
    action: () => void | Promise<void>,
  ): Promise<void> {
    try {
      await action();
    } catch (error) {
      this.logger.error(
        `${consumer}: ${what} failed, the broker will deliver again: ${errorText(error)}`,
      );
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
