import type { Channel, ConsumeMessage } from 'amqplib';
import { MESSAGE_ID_HEADER } from './message-id-header';
import type { DeadLetterReason, InboxDelivery } from '../messaging/messaging-transport';

/** A RabbitMQ delivery on the consumer's own channel: acks and nacks must go back on it. */
export class RabbitMqDelivery implements InboxDelivery {
  readonly messageId: string | undefined;
  readonly unreadableMessageId: string | undefined;
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
    const id = producerMessageId(message);
    this.messageId = id?.text;
    this.unreadableMessageId = id?.unreadable;
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

/** Reads a header's bytes exactly (a leading BOM kept): anything else lets two ids read as one. */
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** What amqplib makes of bytes that are not UTF-8 in a string it decodes (a property, an `S` header). */
const REPLACEMENT_CHARACTER = '\uFFFD';

/**
 * The `message-id` property, else the `x-message-id` header. Never the delivery tag: it
 * numbers deliveries on one channel and changes with every redelivery. An id that cannot be read
 * exactly is refused (`unreadable`): bytes that are not UTF-8 text (amqplib decodes strings with
 * U+FFFD in their place, so an id holding one is refused too), and an integer beyond 2^53, which
 * amqplib hands over rounded (a 64-bit id from a Java producer).
 */
function producerMessageId(
  message: ConsumeMessage,
): { text: string; unreadable?: undefined } | { text?: undefined; unreadable: string } | undefined {
  const fromProperty = message.properties.messageId as unknown;
  // An empty property is no id: a producer that sets the header may leave it so.
  const raw: unknown =
    fromProperty === undefined || fromProperty === ''
      ? message.properties.headers?.[MESSAGE_ID_HEADER]
      : fromProperty;
  if (typeof raw === 'string') {
    return raw.includes(REPLACEMENT_CHARACTER)
      ? { unreadable: 'it holds U+FFFD, what bytes that are not UTF-8 text read as' }
      : { text: raw };
  }
  if (Buffer.isBuffer(raw)) {
    try {
      return { text: UTF8.decode(raw) };
    } catch {
      return { unreadable: `its ${MESSAGE_ID_HEADER} header's bytes are not UTF-8 text` };
    }
  }
  if (typeof raw === 'number' && Number.isFinite(raw)) {
    if (Number.isInteger(raw) && !Number.isSafeInteger(raw)) {
      return {
        unreadable: `its ${MESSAGE_ID_HEADER} header is an integer beyond 2^53, which arrives rounded`,
      };
    }
    return { text: String(raw) };
  }
  return undefined;
}
