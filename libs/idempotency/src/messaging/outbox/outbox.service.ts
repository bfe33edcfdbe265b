import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { currentOperation } from '../../shared/current-operation';
import { MAX_SHORT_STRING_BYTES, MESSAGING_OPTIONS } from '../messaging.constants';
import type { ResolvedMessagingOptions } from '../messaging.defaults';
import { derivedMessageId } from './derived-message-id';
import { type NewOutboxRow, OutboxStore } from './outbox.store';
import { MessagingTransactionHost } from '../messaging-transaction-host';

/** An event to publish once the current transaction commits. */
export interface OutboxEvent {
  /** Where it goes: the exchange for RabbitMQ (a topic for other brokers). */
  exchange: string;
  routingKey: string;
  /** Any JSON-serialisable value; sent as `application/json`. */
  payload: unknown;
  /** Message headers, sent as they are. */
  headers?: Record<string, string | number | boolean>;
  /**
   * Names this publish within its operation, e.g. `'payment.captured'`. Inside an idempotent
   * request or an inbox handler the message id is derived from the operation and the step, so
   * running the step again yields the same id. Default: `'<exchange> <routingKey>'`.
   */
  step?: string;
  /** An id of your own; wins over the derived one. */
  messageId?: string;
}

export interface PublishedEvent {
  messageId: string;
  /** False when this step had already written the same event: nothing new was written. */
  written: boolean;
}

/**
 * The transactional outbox: `publish()` writes the event in the caller's transaction, so it
 * exists exactly when the business change does. The relay sends it after the commit.
 */
export abstract class Outbox {
  /**
   * Must run inside a transaction (an `@Idempotent()` route, an `@InboxHandler()`,
   * `@Transactional()`): an event written on its own would survive the rollback of the change
   * it announces. The message id is, in order: `event.messageId`; derived from the idempotency
   * key or the inbox message and the step; otherwise a random UUID, fixed in the row.
   */
  abstract publish(event: OutboxEvent): Promise<PublishedEvent>;
}

/** The implementation Nest constructs; apps use `Outbox`. */
@Injectable()
export class OutboxService extends Outbox {
  constructor(
    private readonly store: OutboxStore,
    private readonly txHost: MessagingTransactionHost,
    @Inject(MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
  ) {
    super();
  }

  async publish(event: OutboxEvent): Promise<PublishedEvent> {
    if (!this.txHost.isTransactionActive()) {
      throw new Error(
        'Outbox.publish must run inside the transaction of the change it announces ' +
          '(an @Idempotent() route, an @InboxHandler(), or @Transactional())',
      );
    }
    if (!event.exchange && event.exchange !== '')
      throw new Error('Outbox.publish: exchange is required');
    if (!event.routingKey) throw new Error('Outbox.publish: routingKey is required');
    if (event.messageId !== undefined && event.messageId.trim() === '') {
      throw new Error('Outbox.publish: messageId must not be empty');
    }
    const payload = JSON.stringify(event.payload);
    if (payload === undefined) throw new Error('Outbox.publish: payload must be JSON-serialisable');
    const operation = currentOperation();
    const messageId =
      event.messageId ??
      (operation
        ? derivedMessageId(operation, event.step ?? `${event.exchange} ${event.routingKey}`)
        : randomUUID());
    // A row that could never be sent is refused here, in the caller's transaction, instead of
    // failing every publish attempt of the relay.
    for (const [name, value] of [
      ['exchange', event.exchange],
      ['routingKey', event.routingKey],
      ['messageId', messageId],
      // AMQP's field names are short strings too: a longer one fails the client's encoding.
      ...Object.keys(event.headers ?? {}).map((key) => [`header name "${key.slice(0, 40)}"`, key]),
    ]) {
      if (Buffer.byteLength(value, 'utf8') > MAX_SHORT_STRING_BYTES) {
        throw new Error(`Outbox.publish: ${name} is longer than ${MAX_SHORT_STRING_BYTES} bytes`);
      }
    }
    const headers = JSON.stringify(event.headers ?? {});
    // As the relay will hand them to the transport: parsed from the row's JSON.
    const unsendable = this.options.transport?.unsendableHeaders?.(
      JSON.parse(headers) as Record<string, unknown>,
    );
    if (unsendable !== undefined) {
      throw new Error(`Outbox.publish: the headers cannot be sent: ${unsendable}`);
    }
    const row: NewOutboxRow = {
      messageId,
      exchange: event.exchange,
      routingKey: event.routingKey,
      payload,
      headers,
    };
    const result = (await this.store.insert(row)) ?? (await this.store.contentOf(row));
    if (result === 'different' || result === undefined) {
      throw new Error(
        `Outbox.publish: message id ${messageId} was already written with other content; ` +
          'give each publish of one operation its own step',
      );
    }
    return { messageId, written: result === 'inserted' };
  }
}
