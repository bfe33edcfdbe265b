/**
 * Nest's `IncomingEvent`, described here rather than imported: the published types must not
 * need @nestjs/microservices, an optional peer, in apps that do no messaging.
 */
export interface FixedPatternEvent {
  pattern: string;
  data: unknown;
}

/**
 * For Nest's RMQ transport on a queue that other systems publish to: their messages are plain
 * JSON (`{ "orderId": … }`), not Nest's `{ pattern, data }` envelope, and without a pattern
 * Nest finds no handler and drops them. This maps every message of the queue, whatever its
 * shape (content that is not JSON arrives as a string), to one event pattern.
 */
export class FixedPatternDeserializer {
  constructor(private readonly pattern: string) {}

  /** Satisfies Nest's `ConsumerDeserializer` (structurally). */
  deserialize(value: unknown): FixedPatternEvent {
    return { pattern: this.pattern, data: value };
  }
}
