import { randomUUID } from 'node:crypto';
import type {
  CallHandler,
  ExecutionContext,
  INestApplication,
  ModuleMetadata,
} from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Propagation, TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import {
  type DeadLetterReason,
  IdempotencyMessagingModule,
  Inbox,
  type InboxDelivery,
  InboxHandler,
  type InboxSettlement,
  type MessagingModuleOptions,
  type MessagingTransport,
} from 'nestjs-pg-idempotency/messaging';
import { Client } from 'pg';
import { defer, lastValueFrom } from 'rxjs';
import { DataSource } from 'typeorm';
import { InboxInterceptor } from '../../src/messaging/inbox/inbox.interceptor';
import { databaseUrl } from '../support/database-url';
import { libraryInfrastructure } from '../support/library-infrastructure';
import { migrateTestDatabase } from '../support/migrations';
import { TestDatabase } from '../support/test-database';

/** A delivery that records how it was settled: `ack`, `retry` or `dead:<reason>`. */
class RecordedDelivery implements InboxDelivery {
  readonly headers = {};
  readonly settled: string[] = [];
  /** The copy's fate: a broker that refuses it makes `deadLetter` fail. */
  copyFails = false;
  constructor(readonly messageId: string | undefined) {}
  ack(): void {
    this.settled.push('ack');
  }
  retry(): void {
    this.settled.push('retry');
  }
  deadLetter(reason: DeadLetterReason): Promise<void> {
    if (this.copyFails) return Promise.reject(new Error('the copy was not confirmed'));
    this.settled.push(`dead:${reason.code}`);
    return Promise.resolve();
  }
}

/** A transport whose next delivery the test hands in; it publishes nothing (no relay here). */
class HandedTransport implements MessagingTransport {
  next?: RecordedDelivery;
  delivery(): InboxDelivery | undefined {
    return this.next;
  }
  publish(): Promise<void> {
    return Promise.reject(new Error('not used'));
  }
}

const CONSUMER = `settlements-${randomUUID().slice(0, 8)}`;

class Consumers {
  @InboxHandler(CONSUMER, { maxAttempts: 3 })
  handle(): void {}
}

/** The messaging module alone, without relay or cleanup, on `infrastructure`. */
async function messagingApp(
  infrastructure: NonNullable<ModuleMetadata['imports']>,
  options: MessagingModuleOptions = {},
): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      ...infrastructure,
      IdempotencyMessagingModule.forRoot({
        ...options,
        outbox: { relay: false },
        cleanup: { intervalSeconds: 0 },
      }),
    ],
  }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  await migrateTestDatabase(app.get(DataSource));
  await app.init();
  return app;
}

const CONTEXT = {
  getHandler: () => Consumers.prototype.handle,
  getClass: () => Consumers,
  getType: () => 'rpc',
} as unknown as ExecutionContext;

/**
 * How `@InboxHandler` settles a delivery (the interceptor as Nest's microservice server runs
 * it, a transport that only records): what is acked must be committed, a message that cannot
 * be claimed at all leaves the queue, and a dead-lettered message replayed later starts its
 * count afresh.
 */
describe('inbox settlements', () => {
  let app: INestApplication;
  const db = new TestDatabase();
  const transport = new HandedTransport();
  const settlements: InboxSettlement[] = [];
  let interceptor: InboxInterceptor;
  let txHost: TransactionHost<TransactionalAdapterTypeOrm>;

  beforeAll(async () => {
    app = await messagingApp(libraryInfrastructure(), {
      transport,
      inbox: { retryDelayMs: 0, onSettle: (settlement) => void settlements.push(settlement) },
    });
    interceptor = app.get(InboxInterceptor);
    txHost = app.get(TransactionHost);
  });

  afterAll(async () => {
    await app.close();
    await db.close();
  });

  async function deliver(
    messageId: string | undefined,
    handler: () => Promise<unknown>,
    copyFails = false,
  ): Promise<string[]> {
    const delivery = new RecordedDelivery(messageId);
    delivery.copyFails = copyFails;
    transport.next = delivery;
    const next: CallHandler = { handle: () => defer(handler) };
    await lastValueFrom(interceptor.intercept(CONTEXT, next), { defaultValue: undefined });
    return delivery.settled;
  }

  const effect = (tag: string) =>
    txHost.tx.query(`INSERT INTO messaging_test_effects (tag) VALUES ($1)`, [tag]);
  const effects = (tag: string) =>
    db.query(`SELECT 1 FROM messaging_test_effects WHERE tag = $1`, [tag]);
  const claimed = (id: string) =>
    db.query(`SELECT 1 FROM processed_messages WHERE consumer = $1 AND message_id = $2`, [
      CONSUMER,
      id,
    ]);

  it('does not ack a message whose handler went on after a failed statement', async () => {
    const id = randomUUID();
    const tag = `swallowed-${id}`;
    const settled = await deliver(id, async () => {
      await effect(tag);
      // A failure the handler tolerates; PostgreSQL has aborted the transaction all the same.
      await txHost.tx.query('SELECT 1 / 0').catch(() => undefined);
    });
    expect(settled).toEqual(['retry']);
    expect(await claimed(id)).toEqual([]);
    expect(await effects(tag)).toEqual([]);
    // Delivered again to a handler that does not fail: applied once.
    expect(await deliver(id, () => effect(tag))).toEqual(['ack']);
    expect(await effects(tag)).toHaveLength(1);
    expect(await claimed(id)).toHaveLength(1);
  });

  it('acks a handler whose failure stayed inside a savepoint it rolled back', async () => {
    const id = randomUUID();
    const tag = `savepoint-${id}`;
    const settled = await deliver(id, async () => {
      await effect(tag);
      await txHost
        .withTransaction(Propagation.Nested, () => txHost.tx.query('SELECT 1 / 0'))
        .catch(() => undefined);
    });
    expect(settled).toEqual(['ack']);
    expect(await effects(tag)).toHaveLength(1);
  });

  it('dead-letters at once a message id PostgreSQL cannot hold (a NUL character)', async () => {
    const id = `poison\u0000${randomUUID()}`;
    let ran = false;
    const settled = await deliver(id, () => {
      ran = true;
      return Promise.resolve();
    });
    expect(settled).toEqual(['dead:missing-message-id']);
    expect(ran).toBe(false);
  });

  it('reports a dead letter once its copy is safe, and a failed copy as a retry', async () => {
    const id = `poison\u0000${randomUUID()}`;
    settlements.length = 0;
    expect(await deliver(id, () => Promise.resolve(), true)).toEqual(['retry']);
    expect(settlements.map((settlement) => settlement.status)).toEqual(['retried']);
    settlements.length = 0;
    expect(await deliver(id, () => Promise.resolve())).toEqual(['dead:missing-message-id']);
    expect(settlements.map((settlement) => settlement.status)).toEqual(['dead-lettered']);
  });

  it('counts a failure whose error quotes a NUL character', async () => {
    const id = randomUUID();
    const failing = () => Promise.reject(new Error('bad byte \u0000 in input'));
    expect(await deliver(id, failing)).toEqual(['retry']);
    const [row] = await db.query<{ attempts: number; last_error: string }>(
      `SELECT attempts, last_error FROM inbox_failures WHERE consumer = $1 AND message_id = $2`,
      [CONSUMER, id],
    );
    expect(row).toEqual({ attempts: 1, last_error: 'Error: bad byte  in input' });
  });

  it('gives a message replayed from the dead-letter queue maxAttempts again', async () => {
    const id = randomUUID();
    const failing = () => Promise.reject(new Error('deadlock detected'));
    const first: string[] = [];
    for (let attempt = 0; attempt < 3; attempt++) first.push(...(await deliver(id, failing)));
    expect(first).toEqual(['retry', 'retry', 'dead:max-attempts']);
    const failures = () =>
      db.query<{ attempts: number; dead: boolean }>(
        `SELECT attempts, dead_lettered_at IS NOT NULL AS dead
           FROM inbox_failures WHERE consumer = $1 AND message_id = $2`,
        [CONSUMER, id],
      );
    // The count stays on record.
    expect(await failures()).toEqual([{ attempts: 3, dead: true }]);
    // Moved back once fixed: one transient failure is retried, not dead-lettered again.
    expect(await deliver(id, failing)).toEqual(['retry']);
    expect(await failures()).toEqual([{ attempts: 1, dead: false }]);
    expect(await deliver(id, () => Promise.resolve())).toEqual(['ack']);
  });
});

/**
 * Under an app-wide REPEATABLE READ, a delivery whose claim waited on a twin that then
 * committed gets a serialization failure: a duplicate in the making, not a failure.
 */
describe('inbox under REPEATABLE READ', () => {
  let app: INestApplication;

  beforeAll(async () => {
    app = await messagingApp(
      libraryInfrastructure({ defaultTxOptions: { isolationLevel: 'REPEATABLE READ' } }),
    );
  });

  afterAll(() => app.close());

  it('retries a delivery that met its committing twin, and then sees the duplicate', async () => {
    const id = randomUUID();
    const consumer = `rr-${randomUUID().slice(0, 8)}`;
    const twin = new Client({ connectionString: databaseUrl() });
    await twin.connect();
    try {
      await twin.query('BEGIN');
      await twin.query(`INSERT INTO processed_messages (consumer, message_id) VALUES ($1, $2)`, [
        consumer,
        id,
      ]);
      let ran = false;
      const racing = app.get(Inbox).process(consumer, id, () => {
        ran = true;
        return Promise.resolve();
      });
      await new Promise((resolve) => setTimeout(resolve, 200));
      await twin.query('COMMIT');
      await expect(racing).rejects.toThrow('another delivery of this message');
      expect(ran).toBe(false);
    } finally {
      await twin.end();
    }
    await expect(app.get(Inbox).process(consumer, id, () => Promise.resolve())).resolves.toEqual({
      status: 'duplicate',
      messageId: id,
    });
  });
});
