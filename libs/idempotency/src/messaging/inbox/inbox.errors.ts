import { IdempotencyError } from '../../shared/idempotency-error';

/**
 * The message carries no usable producer-assigned id. Without one a redelivery cannot be told
 * from a new message, so it is dead-lettered: never applied, never silently dropped.
 */
export class MissingMessageIdError extends IdempotencyError {
  constructor(detail: string) {
    super(`message has no usable producer-assigned id: ${detail}`);
  }
}

/**
 * Thrown by a handler for a message that can never be applied (malformed payload, unknown
 * subject). Its transaction rolls back and the message is dead-lettered at once, not retried.
 */
export class UnprocessableMessageError extends IdempotencyError {
  constructor(message: string) {
    super(message);
  }
}

/**
 * Another delivery of the same message is being processed right now (its claim is not
 * committed yet) and did not finish within `inbox.lockTimeoutMs`. Nothing ran. Not a failure
 * of the message: retry it later, without counting an attempt; by then the twin has either
 * committed (the retry is a duplicate) or rolled back (the retry applies it).
 */
export class MessageInFlightError extends IdempotencyError {
  constructor(waitedMs: number) {
    super(`another delivery of this message is still being processed (waited ${waitedMs} ms)`);
  }
}
