import type { INestApplication, LogLevel } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { IdempotencyMessagingModule, type OutboxOptions } from 'nestjs-pg-idempotency/messaging';
import { RabbitMqTransport, type RabbitMqTransportOptions } from 'nestjs-pg-idempotency/rabbitmq';
import { DataSource } from 'typeorm';
import { libraryInfrastructure } from '../../../libs/idempotency/test/support/library-infrastructure';
import { migrateTestDatabase } from '../../../libs/idempotency/test/support/migrations';
import { brokerUrl } from './broker';

/**
 * A bare app on the library with the RabbitMQ transport and no relay of its own running: the
 * test calls `OutboxRelay.relayOnce` itself.
 */
export async function outboxAppWithoutRelay(
  outbox: Omit<Partial<OutboxOptions>, 'relay'>,
  logger: LogLevel[],
  transport: Omit<RabbitMqTransportOptions, 'url'> = {},
): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      ...libraryInfrastructure(),
      IdempotencyMessagingModule.forRoot({
        transport: new RabbitMqTransport({ ...transport, url: brokerUrl() }),
        outbox: { ...outbox, relay: false },
        cleanup: { intervalSeconds: 0 },
      }),
    ],
  }).compile();
  const app = moduleRef.createNestApplication({ logger });
  await migrateTestDatabase(app.get(DataSource));
  await app.init();
  return app;
}
