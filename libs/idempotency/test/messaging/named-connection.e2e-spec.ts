import { randomUUID } from 'node:crypto';
import { Body, Controller, type INestApplication, Injectable, Post } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import {
  ClsPluginTransactional,
  getTransactionHostToken,
  InjectTransactionHost,
  TransactionHost,
} from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { IdempotencyModule, Idempotent } from 'nestjs-pg-idempotency';
import { IdempotencyMessagingModule, Inbox, Outbox } from 'nestjs-pg-idempotency/messaging';
import { ClsModule } from 'nestjs-cls';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { databaseUrl } from '../support/database-url';
import { libraryMigrations, migrateTestDatabase } from '../support/migrations';
import { TestDatabase } from '../support/test-database';

const CONNECTION = 'ledger';

/** Writes through the named connection's transaction. */
@Injectable()
class LedgerEffects {
  constructor(
    @InjectTransactionHost(CONNECTION)
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
  ) {}

  record(tag: string): Promise<unknown> {
    return this.txHost.tx.query(`INSERT INTO messaging_test_effects (tag) VALUES ($1)`, [tag]);
  }
}

@Controller('ledger-events')
class LedgerController {
  constructor(
    private readonly outbox: Outbox,
    private readonly effects: LedgerEffects,
  ) {}

  @Post()
  @Idempotent()
  async post(@Body() body: { tag: string }) {
    await this.effects.record(body.tag);
    return this.outbox.publish({
      // An exchange every broker has: a messaging suite's relay beside this one publishes the row.
      exchange: 'amq.topic',
      routingKey: 'posted',
      payload: body,
      step: 'post',
    });
  }
}

/** The app's only transactional connection is named: both modules are told its name. */
function modules(connectionName: string) {
  return [
    TypeOrmModule.forRoot({
      type: 'postgres',
      url: databaseUrl(),
      migrations: libraryMigrations,
    }),
    ClsModule.forRoot({
      global: true,
      plugins: [
        new ClsPluginTransactional({
          connectionName: CONNECTION,
          imports: [TypeOrmModule],
          adapter: new TransactionalAdapterTypeOrm({ dataSourceToken: getDataSourceToken() }),
        }),
      ],
    }),
    IdempotencyModule.forRoot({ transactionConnectionName: connectionName }),
    IdempotencyMessagingModule.forRoot({
      transactionConnectionName: connectionName,
      cleanup: { intervalSeconds: 0 },
    }),
  ];
}

describe('the messaging module on a named transactional connection (transactionConnectionName)', () => {
  let app: INestApplication;
  let db: TestDatabase;

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({
      imports: modules(CONNECTION),
      controllers: [LedgerController],
      providers: [LedgerEffects],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    const dataSource = app.get(DataSource);
    await migrateTestDatabase(dataSource); // messaging_test_effects included
    await app.init();
    db = new TestDatabase();
  });
  afterAll(async () => {
    await app?.close();
    await db?.close();
  });

  it('claims an inbox message in the named connection, with the handler writes', async () => {
    const id = randomUUID();
    const effects = app.get(LedgerEffects);
    const inbox = app.get(Inbox);
    const ledger = app.get<TransactionHost<TransactionalAdapterTypeOrm>>(
      getTransactionHostToken(CONNECTION),
    );
    let inLedgerTransaction = false;
    const applied = await inbox.process('ledger-consumer', id, async () => {
      inLedgerTransaction = ledger.isTransactionActive(); // the claim's transaction is the named one
      await effects.record(id);
    });
    expect(applied.status).toBe('applied');
    expect(inLedgerTransaction).toBe(true);
    expect((await inbox.process('ledger-consumer', id, () => effects.record(id))).status).toBe(
      'duplicate',
    );
    expect(
      await db.query(`SELECT 1 FROM messaging_test_effects WHERE tag = $1`, [id]),
    ).toHaveLength(1);
    expect(
      await db.query(`SELECT 1 FROM processed_messages WHERE message_id = $1`, [id]),
    ).toHaveLength(1);
  });

  it('writes an outbox event in the idempotent request transaction of the named connection', async () => {
    const tag = randomUUID();
    const key = randomUUID();
    const first = await request(app.getHttpServer())
      .post('/ledger-events')
      .set('idempotency-key', key)
      .send({ tag })
      .expect(201);
    const replay = await request(app.getHttpServer())
      .post('/ledger-events')
      .set('idempotency-key', key)
      .send({ tag })
      .expect(201);
    expect(replay.text).toBe(first.text);
    expect(
      await db.query(`SELECT 1 FROM messaging_test_effects WHERE tag = $1`, [tag]),
    ).toHaveLength(1);
    expect(
      await db.query(`SELECT 1 FROM outbox_messages WHERE message_id = $1`, [first.body.messageId]),
    ).toHaveLength(1);
  });
});
