import { type RmqOptions, Transport } from '@nestjs/microservices';
import { FixedPatternDeserializer } from 'nestjs-pg-idempotency/rabbitmq';
import { type MessagingSettings, ORDER_PAYMENTS_PATTERN } from './messaging.config';

/**
 * Nest's RMQ transport on the `order-payments` queue, with manual acks: the inbox acks after
 * the commit, so `noAck` must be false. Prefetch above 1 lets one process apply several
 * messages at once; the inbox keeps that safe.
 */
export function orderPaymentsMicroservice(settings: MessagingSettings): RmqOptions {
  return {
    transport: Transport.RMQ,
    options: {
      urls: [settings.amqpUrl],
      queue: settings.orderPaymentsQueue,
      queueOptions: { durable: true },
      noAck: false,
      prefetchCount: settings.prefetchCount,
      deserializer: new FixedPatternDeserializer(ORDER_PAYMENTS_PATTERN),
    },
  };
}
