// nestjs-pg-idempotency/rabbitmq: the messaging module's transport on RabbitMQ. amqplib (through
// amqp-connection-manager) is loaded only when a RabbitMqTransport starts, never on import.
export {
  RabbitMqTransport,
  type RabbitMqTopology,
  type RabbitMqTransportOptions,
} from './rabbitmq.transport';
export { MESSAGE_ID_HEADER } from './message-id-header';
export { FixedPatternDeserializer, type FixedPatternEvent } from './fixed-pattern.deserializer';

// The messaging contract RabbitMqTransport implements, repeated as types only so that this entry
// point's declarations stand complete (its API report names them); their home, and the import
// for a transport of your own, is nestjs-pg-idempotency/messaging.
export type {
  InboxDelivery,
  MessagingTransport,
  OutboxMessage,
  DeadLetterReason,
} from '../messaging/messaging-transport';
