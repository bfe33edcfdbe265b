/** Injection token of the messaging options with every default filled in. */
export const MESSAGING_OPTIONS = Symbol('idempotency:messaging-options');

/** Metadata key under which `@InboxHandler()` keeps a handler's options. */
export const INBOX_HANDLER = Symbol('idempotency:inbox-handler');

/**
 * AMQP carries the exchange, the routing key and the message id as short strings: 255 bytes at
 * most. The outbox refuses longer ones, and the inbox longer message ids, on any transport.
 */
export const MAX_SHORT_STRING_BYTES = 255;
