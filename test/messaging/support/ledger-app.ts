import { Controller, type INestApplication } from '@nestjs/common';
import { Ctx, EventPattern, Payload, type RmqContext, Transport } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import {
  IdempotencyMessagingModule,
  InboxHandler,
  type InboxSettlement,
} from 'nestjs-pg-idempotency/messaging';
import { FixedPatternDeserializer, RabbitMqTransport } from 'nestjs-pg-idempotency/rabbitmq';
import { DataSource } from 'typeorm';
import {
  MIGRATION_LOCK_ID,
  runMigrations,
} from '../../../apps/payments-api/src/database/run-migrations';
import { brokerUrl } from './broker';
import { libraryInfrastructure } from '../../../libs/idempotency/test/support/library-infrastructure';
import { paymentsApiMigrations } from '../../../migrations';

export const LEDGER_CONSUMER = 'order-created-ledger';
const LEDGER_PATTERN = 'ledger';

/** Writes one ledger row per applied event, through the inbox transaction. */
@Controller()
class LedgerConsumer {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  @EventPattern(LEDGER_PATTERN)
  @InboxHandler(LEDGER_CONSUMER)
  async apply(@Payload() event: { orderId: string }, @Ctx() context: RmqContext): Promise<void> {
    await this.txHost.tx.query(
      `INSERT INTO messaging_test_ledger (message_id, order_id) VALUES ($1, $2)`,
      [context.getMessage().properties.messageId, event.orderId],
    );
  }
}

/**
 * A second, independent consumer built on the library as a user would: a bare Nest app whose
 * RMQ microservice reads `queue` (bound to events by the test) through `@InboxHandler()`.
 * It runs no relay; its `onSettle` hook records every settlement for the test to wait on.
 */
export async function startLedgerApp(queue: string): Promise<{
  app: INestApplication;
  settlements: InboxSettlement[];
  dataSource: DataSource;
}> {
  const settlements: InboxSettlement[] = [];
  const moduleRef = await Test.createTestingModule({
    imports: [
      // The demo's migrations, run by the demo's runMigrations below.
      ...libraryInfrastructure({ migrations: paymentsApiMigrations }),
      IdempotencyMessagingModule.forRoot({
        transport: new RabbitMqTransport({
          url: brokerUrl(),
          deadLetterQueues: { [LEDGER_CONSUMER]: `${queue}.dead` },
        }),
        inbox: { onSettle: (settlement) => void settlements.push(settlement) },
        outbox: { relay: false },
        cleanup: { intervalSeconds: 0 },
      }),
    ],
    controllers: [LedgerConsumer],
  }).compile();
  const app = moduleRef.createNestApplication({ logger: ['error', 'warn'] });
  const dataSource = app.get(DataSource);
  await runMigrations(dataSource);
  // Under the migrations' lock: two suites creating the table at once can collide in the catalog.
  await dataSource.transaction(async (manager) => {
    await manager.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_ID]);
    await manager.query(
      `CREATE TABLE IF NOT EXISTS messaging_test_ledger (id serial PRIMARY KEY, message_id text, order_id text NOT NULL)`,
    );
  });
  app.connectMicroservice({
    transport: Transport.RMQ,
    options: {
      urls: [brokerUrl()],
      queue,
      queueOptions: { durable: true },
      noAck: false,
      prefetchCount: 5,
      deserializer: new FixedPatternDeserializer(LEDGER_PATTERN),
    },
  });
  await app.startAllMicroservices();
  await app.init();
  return { app, settlements, dataSource };
}
