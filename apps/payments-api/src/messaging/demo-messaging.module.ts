import { type DynamicModule, Module } from '@nestjs/common';
import { IdempotencyMessagingModule } from 'nestjs-pg-idempotency/messaging';
import { RabbitMqTransport } from 'nestjs-pg-idempotency/rabbitmq';
import { MessageFaults } from '../faults/message-faults';
import {
  deadLetterQueueOf,
  type MessagingSettings,
  ORDER_PAYMENTS_CONSUMER,
  PAYMENTS_EXCHANGE,
} from './messaging.config';
import { OrderPaymentsConsumer } from './order-payments.consumer';

/** The demo's messaging part: the library's inbox and outbox on RabbitMQ, and the consumer. */
@Module({})
export class DemoMessagingModule {
  static register(settings: MessagingSettings, demoFaults: boolean): DynamicModule {
    const faults = new MessageFaults(demoFaults);
    const deadLetterQueue = deadLetterQueueOf(settings.orderPaymentsQueue);
    return {
      module: DemoMessagingModule,
      imports: [
        IdempotencyMessagingModule.forRoot({
          transport: new RabbitMqTransport({
            url: settings.amqpUrl,
            topology: {
              exchanges: [{ name: PAYMENTS_EXCHANGE, type: 'topic' }],
              queues: [{ name: settings.orderPaymentsQueue }],
            },
            deadLetterQueues: { [ORDER_PAYMENTS_CONSUMER]: deadLetterQueue },
          }),
          inbox: {
            maxAttempts: settings.maxAttempts,
            retryDelayMs: 100,
            onSettle: faults.onSettle,
          },
          outbox: {
            relay: settings.relay,
            pollIntervalMs: settings.relayPollMs,
            onPublished: faults.onPublished,
          },
        }),
      ],
      controllers: [OrderPaymentsConsumer],
    };
  }
}
