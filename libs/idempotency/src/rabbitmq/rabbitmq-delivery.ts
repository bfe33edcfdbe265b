import type { Channel, ConsumeMessage } from 'amqplib';
import { MESSAGE_ID_HEADER } from './message-id-header';
import type { DeadLetterReason, InboxDelivery } from '../messaging/messaging-transport';

/** A RabbitMQ delivery on the consumer's own channel: acks and nacks must go back on it. */
export class RabbitMqDelivery implements InboxDelivery {
  readonly messageId: string | undefined;
  readonly headers: Readonly<Record<string, unknown>>;

  constructor(
    private readonly channel: Channel,
    private readonly message: ConsumeMessage,
    private readonly sendToDeadLetterQueue: (
      message: ConsumeMessage,
      reason: DeadLetterReason,
    ) => Promise<void>,
  ) {
    this.headers = message.properties.headers ?? {};
    this.messageId = producerMessageId(message);
  }

  ack(): void {
    this.channel.ack(this.message);
  }

  retry(): void {
    this.channel.nack(this.message, false, true);
  }

  /** Copy first, with confirm; the original is acked only once the copy is safe. */
  async deadLetter(reason: DeadLetterReason): Promise<void> {
    await this.sendToDeadLetterQueue(this.message, reason);
    this.channel.ack(this.message);
  }
}

/**
 * The `message-id` property, else the `x-message-id` header. Never the delivery tag: it
 * numbers deliveries on one channel and changes with every redelivery.
 */
function producerMessageId(message: ConsumeMessage): string | undefined {
  const fromProperty = message.properties.messageId as unknown;
  // An empty property is no id: a producer that sets the header may leave it so.
  const raw: unknown =
    fromProperty === undefined || fromProperty === ''
      ? message.properties.headers?.[MESSAGE_ID_HEADER]
      : fromProperty;
  if (typeof raw === 'string') return raw;
  if (Buffer.isBuffer(raw)) return raw.toString('utf8');
  if (typeof raw === 'number' && Number.isFinite(raw)) return String(raw);
  return undefined;
}
