/**
 * The message carries no usable producer-assigned id. Without one a redelivery cannot be told
 * from a new message, so it is dead-lettered: never applied, never silently dropped.
 */
export class MissingMessageIdError extends Error {
  constructor(detail: string) {
    super(`message has no usable producer-assigned id: ${detail}`);
    this.name = 'MissingMessageIdError';
  }
}

/**
 * Thrown by a handler for a message that can never be applied (malformed payload, unknown
 * subject). Its transaction rolls back and the message is dead-lettered at once, not retried.
 */
export class UnprocessableMessageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnprocessableMessageError';
  }
}
