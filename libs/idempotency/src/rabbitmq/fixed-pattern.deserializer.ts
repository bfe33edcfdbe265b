import type { ConsumerDeserializer, IncomingEvent } from '@nestjs/microservices';

/**
 * For Nest's RMQ transport on a queue that other systems publish to: their messages are plain
 * JSON (`{ "orderId": … }`), not Nest's `{ pattern, data }` envelope, and without a pattern
 * Nest finds no handler and drops them. This maps every message of the queue, whatever its
 * shape (content that is not JSON arrives as a string), to one event pattern.
 */
export class FixedPatternDeserializer implements ConsumerDeserializer {
  constructor(private readonly pattern: string) {}

  deserialize(value: unknown): IncomingEvent {
    return { pattern: this.pattern, data: value };
  }
}
