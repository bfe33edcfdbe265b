import { errorText } from '../../shared/error-text';
import { Inject, Injectable } from '@nestjs/common';
import { Propagation } from '@nestjs-cls/transactional';
import { bindCurrentOperation } from '../../shared/current-operation';
import { MAX_SHORT_STRING_BYTES, MESSAGING_OPTIONS } from '../messaging.constants';
import type { ResolvedMessagingOptions } from '../messaging.defaults';
import { MissingMessageIdError } from './inbox.errors';
import { InboxStore } from './inbox.store';
import { MessagingTransactionHost } from '../messaging-transaction-host';

export type InboxOutcome<T> =
  { status: 'applied'; messageId: string; result: T } | { status: 'duplicate'; messageId: string };

/**
 * Applies each message once per consumer, for any transport: the processed-message row and the
 * handler's writes commit in one transaction, or neither does.
 */
export abstract class Inbox {
  /**
   * Runs `handler` in a new transaction together with the claim of `(consumer, messageId)`.
   * Resolves after COMMIT, so the caller acknowledges only what is durable. A message already
   * processed resolves as `duplicate` without running the handler; the caller acks it too.
   * Throws `MissingMessageIdError` for a missing or unusable id (dead-letter it), and rethrows
   * whatever the handler throws, after the rollback.
   *
   * `messageId` must be assigned by the producer (AMQP `message-id`, a Kafka header…), never a
   * delivery tag or an offset: those change when the broker delivers again.
   */
  abstract process<T>(
    consumer: string,
    messageId: string | undefined,
    handler: () => Promise<T>,
  ): Promise<InboxOutcome<T>>;

  /** Counts one failed delivery of the message; returns the attempts so far. */
  abstract recordFailure(consumer: string, messageId: string, error: unknown): Promise<number>;
}

/** The implementation Nest constructs; apps use `Inbox`. */
@Injectable()
export class InboxService extends Inbox {
  constructor(
    @Inject(MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    private readonly store: InboxStore,
    private readonly txHost: MessagingTransactionHost,
  ) {
    super();
  }

  async process<T>(
    consumer: string,
    messageId: string | undefined,
    handler: () => Promise<T>,
  ): Promise<InboxOutcome<T>> {
    const id = usableMessageId(messageId);
    if (!consumer) throw new Error('Inbox.process needs a consumer name');
    // RequiresNew: the outcome must be committed when this resolves, even if a caller has a
    // transaction open; joining it would let the caller ack before anything is durable.
    return this.txHost.withTransaction(
      Propagation.RequiresNew,
      async (): Promise<InboxOutcome<T>> => {
        bindCurrentOperation({ kind: 'message', consumer, messageId: id });
        const claimed = await this.store.claim(consumer, id, this.options.inbox.lockTimeoutMs);
        if (!claimed) return { status: 'duplicate', messageId: id };
        this.store.refuseSilentRollback();
        const statements = this.store.watchStatements();
        try {
          const result = await handler();
          await statements.assertUsable();
          return { status: 'applied', messageId: id, result };
        } finally {
          statements.stop();
        }
      },
    );
  }

  recordFailure(consumer: string, messageId: string, error: unknown): Promise<number> {
    return this.store.recordFailure(consumer, messageId, errorText(error));
  }
}

function usableMessageId(messageId: string | undefined): string {
  if (messageId === undefined) throw new MissingMessageIdError('none was sent');
  if (messageId.trim() === '') throw new MissingMessageIdError('it is empty');
  // PostgreSQL text cannot hold it: every claim of the message would fail, and so would the
  // count of its failures, for ever.
  if (messageId.includes('\u0000')) throw new MissingMessageIdError('it contains a NUL character');
  if (Buffer.byteLength(messageId, 'utf8') > MAX_SHORT_STRING_BYTES) {
    throw new MissingMessageIdError(`it is longer than ${MAX_SHORT_STRING_BYTES} bytes`);
  }
  return messageId;
}
