import type { ExecutionContext } from '@nestjs/common';

/** One outbox row as the relay hands it to a transport. */
export interface OutboxMessage {
  /** Stable across every publish of this row: consumers deduplicate on it. */
  messageId: string;
  exchange: string;
  routingKey: string;
  payload: unknown;
  headers: Record<string, unknown>;
  createdAt: Date;
  /** Earlier publish attempts that failed (0 on the first try). */
  attempts: number;
}

/** Why a delivery goes to the dead-letter queue instead of being applied. */
export interface DeadLetterReason {
  code: 'missing-message-id' | 'unprocessable' | 'max-attempts';
  consumer: string;
  detail: string;
  /** Failed deliveries so far (0 when the message was refused before any attempt). */
  attempts: number;
}

/**
 * One delivered message, as a transport exposes it to the inbox. The inbox decides; the
 * delivery only tells the broker.
 */
export interface InboxDelivery {
  /** The producer-assigned id as received, or undefined when the message carries none. */
  readonly messageId: string | undefined;
  /**
   * Why the id the message carries cannot be read exactly, where it cannot: two different ids
   * would read as one, and the second message would be skipped as a duplicate. Such a message
   * is dead-lettered (`missing-message-id`), never applied.
   */
  readonly unreadableMessageId?: string;
  readonly headers: Readonly<Record<string, unknown>>;
  /** Done: applied now or before. Called only after the commit. */
  ack(): void | Promise<void>;
  /** Transient failure: give the message back to the broker for another delivery. */
  retry(): void | Promise<void>;
  /** Never applicable: park a copy on the dead-letter queue, then drop this delivery. */
  deadLetter(reason: DeadLetterReason): Promise<void>;
}

/**
 * What the messaging module needs from a broker. Each part is optional: an app that only
 * consumes needs `delivery`, one that only publishes needs `publish`. The RabbitMQ
 * implementation is `RabbitMqTransport`; another broker plugs in by implementing this.
 */
export interface MessagingTransport {
  /** Connects; called once when the app boots, before the relay starts. */
  start?(): Promise<void>;
  /** Disconnects; called when the app shuts down, after the relay stopped. */
  close?(): Promise<void>;
  /** Publishes one message and resolves only once the broker has confirmed it. */
  publish?(message: OutboxMessage): Promise<void>;
  /**
   * Why message headers could never be sent on this broker, or undefined when they can.
   * `Outbox.publish` refuses such an event in the caller's transaction, instead of writing a row
   * that every publish attempt of the relay would fail.
   */
  unsendableHeaders?(headers: Record<string, unknown>): string | undefined;
  /** The delivery behind a message handler's execution context, or undefined if not this transport's. */
  delivery?(context: ExecutionContext, consumer: string): InboxDelivery | undefined;
}
