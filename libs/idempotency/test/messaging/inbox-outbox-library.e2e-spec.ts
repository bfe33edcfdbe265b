import { randomUUID } from 'node:crypto';
import { Body, Controller, type INestApplication, Injectable, Post } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { IdempotencyModule, Idempotent } from 'nestjs-pg-idempotency';
import {
  derivedMessageId,
  IdempotencyMessagingModule,
  Inbox,
  MessageInFlightError,
  MessagingCleanup,
  MissingMessageIdError,
  Outbox,
} from 'nestjs-pg-idempotency/messaging';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { withAppTypeParsers } from '../support/app-type-parsers';
import { libraryInfrastructure } from '../support/library-infrastructure';
import { migrateTestDatabase } from '../support/migrations';
import { TestDatabase } from '../support/test-database';

/** A side effect in the same database: one row per application. */
@Injectable()
class Effects {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  record(tag: string): Promise<unknown> {
    return this.txHost.tx.query(`INSERT INTO messaging_test_effects (tag) VALUES ($1)`, [tag]);
  }
}

/**
 * An exchange every RabbitMQ broker has. The outbox rows left here are due: the relay of a
 * messaging suite running beside this one publishes them, and a missing exchange would fail its
 * batch (and the rows of that suite within it).
 */
const EXCHANGE = 'amq.topic';

@Controller('events')
class EventsController {
  constructor(private readonly outbox: Outbox) {}

  /** Publishes two steps of one idempotent request. */
  @Post()
  @Idempotent()
  async publish(@Body() body: { tag: string }) {
    const reserved = await this.outbox.publish({
      exchange: EXCHANGE,
      routingKey: 'reserved',
      payload: body,
      step: 'reserve',
    });
    const charged = await this.outbox.publish({
      exchange: EXCHANGE,
      routingKey: 'charged',
      payload: body,
      step: 'charge',
    });
    return { reserved: reserved.messageId, charged: charged.messageId };
  }
}

/**
 * The inbox, the outbox and retention on PostgreSQL alone: the parts of the library that need
 * no broker, in a bare app as a user would set it up (no transport, so no relay).
 */
describe('inbox and outbox in the library (PostgreSQL only)', () => {
  let app: INestApplication;
  let db: TestDatabase;
  let inbox: Inbox;
  let outbox: Outbox;
  let txHost: TransactionHost<TransactionalAdapterTypeOrm>;
  let effects: Effects;

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        ...libraryInfrastructure(),
        IdempotencyModule.forRoot({ replayCache: false }), // a test moves expiry by SQL
        IdempotencyMessagingModule.forRoot({ cleanup: { intervalSeconds: 0, batchSize: 10 } }),
      ],
      controllers: [EventsController],
      providers: [Effects],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    const dataSource = app.get(DataSource);
    await migrateTestDatabase(dataSource); // messaging_test_effects included
    await app.init();
    db = new TestDatabase();
    inbox = app.get(Inbox);
    outbox = app.get(Outbox);
    txHost = app.get(TransactionHost);
    effects = app.get(Effects);
  });
  afterAll(async () => {
    await app?.close();
    await db?.close();
  });

  const effectsOf = async (tag: string) =>
    (await db.query(`SELECT 1 FROM messaging_test_effects WHERE tag = $1`, [tag])).length;
  const claims = async (consumer: string, messageId: string) =>
    (
      await db.query(`SELECT 1 FROM processed_messages WHERE consumer = $1 AND message_id = $2`, [
        consumer,
        messageId,
      ])
    ).length;

  /** `count` message ids `<tag>-old-<n>` that `consumer` processed past the retention. */
  const processedLongAgo = (consumer: string, tag: string, count: number) =>
    db.query(
      `INSERT INTO processed_messages (consumer, message_id, processed_at)
       SELECT $1, $2 || '-old-' || i, now() - interval '8 days' FROM generate_series(1, $3) AS i`,
      [consumer, tag, count],
    );

  describe('Inbox.process', () => {
    it('applies a message once and reports the second delivery as a duplicate', async () => {
      const id = randomUUID();
      const first = await inbox.process('lib-consumer', id, () =>
        effects.record(id).then(() => 'done'),
      );
      const second = await inbox.process('lib-consumer', id, () => effects.record(id));

      expect(first).toEqual({ status: 'applied', messageId: id, result: 'done' });
      expect(second).toEqual({ status: 'duplicate', messageId: id });
      expect(await effectsOf(id)).toBe(1);
      expect(await claims('lib-consumer', id)).toBe(1);
    });

    it('keys the claim by consumer: two consumers each apply the same message', async () => {
      const id = randomUUID();
      await inbox.process('lib-a', id, () => effects.record(id));
      await inbox.process('lib-b', id, () => effects.record(id));
      expect(await effectsOf(id)).toBe(2);
    });

    it('rolls the claim back with a failing handler, so the next delivery applies it', async () => {
      const id = randomUUID();
      await expect(
        inbox.process('lib-consumer', id, async () => {
          await effects.record(id);
          throw new Error('transient');
        }),
      ).rejects.toThrow('transient');
      expect(await claims('lib-consumer', id)).toBe(0);
      expect(await effectsOf(id)).toBe(0);

      expect((await inbox.process('lib-consumer', id, () => effects.record(id))).status).toBe(
        'applied',
      );
      expect(await effectsOf(id)).toBe(1);
    });

    it('does not apply a message whose handler left a failing statement running', async () => {
      const id = randomUUID();
      await expect(
        inbox.process('lib-consumer', id, async () => {
          await effects.record(id);
          // Sent and not awaited: it fails after the handler returned.
          void txHost.tx.query('SELECT pg_sleep(0.05), 1 / 0').catch(() => undefined);
        }),
      ).rejects.toThrow(/went on after a failed statement/);
      expect(await claims('lib-consumer', id)).toBe(0);
      expect(await effectsOf(id)).toBe(0);
    });

    it('does not apply a message whose handler left a chain of statements running', async () => {
      const id = randomUUID();
      await expect(
        inbox.process('lib-consumer', id, async () => {
          await effects.record(id);
          // The failing statement is sent only once the first one is through.
          void (async () => {
            await txHost.tx.query('SELECT pg_sleep(0.05)');
            await txHost.tx.query('SELECT 1 / 0');
          })().catch(() => undefined);
        }),
      ).rejects.toThrow(/rolled the transaction back at COMMIT|went on after a failed statement/);
      expect(await claims('lib-consumer', id)).toBe(0);
      expect(await effectsOf(id)).toBe(0);
    });

    it('applies 20 simultaneous deliveries of one message once', async () => {
      const id = randomUUID();
      const outcomes = await Promise.all(
        Array.from({ length: 20 }, () =>
          inbox.process('lib-consumer', id, () => effects.record(id)),
        ),
      );
      expect(outcomes.filter((o) => o.status === 'applied')).toHaveLength(1);
      expect(outcomes.filter((o) => o.status === 'duplicate')).toHaveLength(19);
      expect(await effectsOf(id)).toBe(1);
    });

    it("gives the handler its transaction's own lock_timeout: the claim's bound is for the claim alone", async () => {
      const [{ lock_timeout: serverDefault }] = await db.query<{ lock_timeout: string }>(
        'SHOW lock_timeout',
      );
      const outcome = await inbox.process('lib-consumer', randomUUID(), async () => {
        const [row] = await txHost.tx.query(`SELECT current_setting('lock_timeout') AS value`);
        return row.value as string;
      });
      expect(outcome).toMatchObject({ status: 'applied', result: serverDefault });
      expect(serverDefault).not.toBe('5s'); // the inbox's default bound, which must not leak
    });

    it('answers MessageInFlightError, running nothing, while a twin delivery holds the claim past the bound', async () => {
      const id = randomUUID();
      const twin = await db.holdUncommitted(
        `INSERT INTO processed_messages (consumer, message_id) VALUES ('lib-consumer', $1)`,
        [id],
      );
      try {
        const started = Date.now();
        await expect(
          inbox.process('lib-consumer', id, () => effects.record(id)),
        ).rejects.toBeInstanceOf(MessageInFlightError);
        expect(Date.now() - started).toBeGreaterThanOrEqual(4900); // inbox.lockTimeoutMs, 5 s by default
        expect(await effectsOf(id)).toBe(0);
      } finally {
        await twin.rollback();
      }
      // The twin rolled back: the next delivery applies the message.
      expect((await inbox.process('lib-consumer', id, () => effects.record(id))).status).toBe(
        'applied',
      );
      expect(await effectsOf(id)).toBe(1);
    });

    it.each([
      ['no id', undefined],
      ['an empty id', ''],
      ['a blank id', '   '],
      ['an id over 255 bytes', 'x'.repeat(256)],
    ])('refuses a message with %s and runs nothing', async (_label, messageId) => {
      const tag = randomUUID();
      await expect(
        inbox.process('lib-consumer', messageId, () => effects.record(tag)),
      ).rejects.toBeInstanceOf(MissingMessageIdError);
      expect(await effectsOf(tag)).toBe(0);
    });

    it('counts failed attempts across calls, for the dead-letter bound', async () => {
      const id = randomUUID();
      expect(await inbox.recordFailure('lib-consumer', id, new Error('one'))).toBe(1);
      expect(await inbox.recordFailure('lib-consumer', id, new Error('two'))).toBe(2);
      const [row] = await db.query<{ attempts: number; last_error: string }>(
        `SELECT attempts, last_error FROM inbox_failures WHERE consumer = 'lib-consumer' AND message_id = $1`,
        [id],
      );
      expect(row).toEqual({ attempts: 2, last_error: 'Error: two' });
    });
  });

  it("counts and purges as text of its own, whatever the app's own type parsers make of integers", async () => {
    // An app may read integers as text: the failure count and the purge's count come back as
    // text the library turns into numbers, as their types say.
    const id = randomUUID();
    const tag = randomUUID().slice(0, 8);
    await processedLongAgo('lib-parsers', tag, 3);
    await withAppTypeParsers(async () => {
      expect(await inbox.recordFailure('lib-parsers', id, new Error('one'))).toBe(1);
      expect(await inbox.recordFailure('lib-parsers', id, new Error('two'))).toBe(2);
      const purged = await app.get(MessagingCleanup).purge();
      expect(typeof purged.processedMessages).toBe('number');
      expect(purged.processedMessages).toBeGreaterThanOrEqual(3);
    });
    expect(
      await db.query(`SELECT 1 FROM processed_messages WHERE message_id LIKE $1`, [`${tag}-%`]),
    ).toHaveLength(0);
  });

  describe('Outbox.publish', () => {
    const rowsOf = (messageIds: string[]) =>
      db.query<{ message_id: string; routing_key: string; status: string; payload: unknown }>(
        `SELECT message_id, routing_key, status, payload FROM outbox_messages WHERE message_id = ANY($1) ORDER BY id`,
        [messageIds],
      );

    it('makes events due in the order they were written, not the order their transactions began', async () => {
      const first = randomUUID();
      const second = randomUUID();
      let began!: () => void;
      const hasBegun = new Promise<void>((resolve) => (began = resolve));
      let goOn!: () => void;
      const mayGoOn = new Promise<void>((resolve) => (goOn = resolve));
      // The later writer's transaction begins first (its now() is taken), and writes its event
      // only once the other's is committed: as after waiting on a lock the other held.
      const later = txHost.withTransaction(async () => {
        await txHost.tx.query('SELECT 1');
        began();
        await mayGoOn;
        await outbox.publish({
          exchange: EXCHANGE,
          routingKey: 'o',
          payload: {},
          messageId: second,
        });
      });
      await hasBegun;
      await new Promise((resolve) => setTimeout(resolve, 20));
      await txHost.withTransaction(() =>
        outbox.publish({ exchange: EXCHANGE, routingKey: 'o', payload: {}, messageId: first }),
      );
      goOn();
      await later;
      // The relay's order (sent or not by now: a relay beside this suite may have taken them).
      const rows = await db.query<{ message_id: string }>(
        `SELECT message_id FROM outbox_messages WHERE message_id = ANY($1) ORDER BY next_attempt_at, id`,
        [[first, second]],
      );
      expect(rows.map((row) => row.message_id)).toEqual([first, second]);
    });

    it('refuses to write outside a transaction', async () => {
      const messageId = randomUUID();
      await expect(
        outbox.publish({ exchange: EXCHANGE, routingKey: 'x', payload: {}, messageId }),
      ).rejects.toThrow(/inside the transaction/);
      expect(await rowsOf([messageId])).toHaveLength(0);
    });

    it('writes nothing when the transaction rolls back', async () => {
      const messageId = randomUUID();
      await expect(
        txHost.withTransaction(async () => {
          await outbox.publish({ exchange: EXCHANGE, routingKey: 'x', payload: {}, messageId });
          throw new Error('business rule failed');
        }),
      ).rejects.toThrow('business rule failed');
      expect(await rowsOf([messageId])).toHaveLength(0);
    });

    it.each([
      [
        'a routing key over 255 bytes',
        { routingKey: 'r'.repeat(256) },
        /routingKey is longer than 255 bytes/,
      ],
      [
        'an exchange over 255 bytes',
        { exchange: 'é'.repeat(128) },
        /exchange is longer than 255 bytes/,
      ],
      [
        'a message id over 255 bytes',
        { messageIdOf: (tag: string) => `${tag}-${'m'.repeat(255)}` },
        /messageId is longer/,
      ],
      ['an empty message id', { messageIdOf: () => ' ' }, /messageId must not be empty/],
      [
        'a header name over 255 bytes',
        { headers: { ['h'.repeat(256)]: 'x' } },
        /header name "h+" is longer than 255 bytes/,
      ],
    ])(
      'refuses an event with %s, which no broker would take, and writes nothing',
      async (_label, change, refusal) => {
        const tag = randomUUID();
        const { messageIdOf, ...fields } = change as {
          messageIdOf?: (tag: string) => string;
          routingKey?: string;
          exchange?: string;
        };
        await expect(
          txHost.withTransaction(() =>
            outbox.publish({
              exchange: EXCHANGE,
              routingKey: 'x',
              payload: { tag },
              messageId: messageIdOf?.(tag),
              ...fields,
            }),
          ),
        ).rejects.toThrow(refusal);
        expect(
          await db.query(`SELECT 1 FROM outbox_messages WHERE payload->>'tag' = $1`, [tag]),
        ).toHaveLength(0);
      },
    );

    it('derives the ids of an idempotent request from its key and the step names, and a replay writes nothing', async () => {
      const key = `key-${randomUUID()}`;
      const send = () =>
        request(app.getHttpServer()).post('/events').set('idempotency-key', key).send({ tag: key });
      const first = await send();
      const replay = await send();

      const [{ generation }] = await app
        .get(DataSource)
        .query(
          `SELECT (extract(epoch FROM created_at) * 1000000)::bigint::text AS generation FROM idempotency_keys WHERE idem_key = $1`,
          [key],
        );
      const operation = {
        kind: 'request' as const,
        tenantId: '',
        scope: 'POST /events',
        key,
        generation,
      };
      expect(first.status).toBe(201);
      expect(first.body).toEqual({
        reserved: derivedMessageId(operation, 'reserve'),
        charged: derivedMessageId(operation, 'charge'),
      });
      expect(replay.text).toBe(first.text);
      const rows = await rowsOf([first.body.reserved, first.body.charged]);
      expect(rows).toEqual([
        {
          message_id: first.body.reserved,
          routing_key: 'reserved',
          status: 'pending',
          payload: { tag: key },
        },
        {
          message_id: first.body.charged,
          routing_key: 'charged',
          status: 'pending',
          payload: { tag: key },
        },
      ]);
    });

    it('gives a key claimed anew after it expired new event ids: consumers must not skip its events', async () => {
      const key = `key-${randomUUID()}`;
      const send = () =>
        request(app.getHttpServer()).post('/events').set('idempotency-key', key).send({ tag: key });
      const first = await send();
      await app
        .get(DataSource)
        .query(
          `UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE idem_key = $1`,
          [key],
        );
      const again = await send();
      expect([first.status, again.status]).toEqual([201, 201]);
      expect(again.body.reserved).not.toBe(first.body.reserved);
      expect(await rowsOf([first.body.reserved, again.body.reserved])).toHaveLength(2);
    });

    it('derives ids inside an inbox handler from the message; a step written again is one row', async () => {
      const id = randomUUID();
      const outcome = await inbox.process('lib-consumer', id, async () => {
        const once = await outbox.publish({
          exchange: EXCHANGE,
          routingKey: 'next',
          payload: { id },
          step: 'forward',
        });
        const again = await outbox.publish({
          exchange: EXCHANGE,
          routingKey: 'next',
          payload: { id },
          step: 'forward',
        });
        return [once, again];
      });
      const expected = derivedMessageId(
        { kind: 'message', consumer: 'lib-consumer', messageId: id },
        'forward',
      );
      expect(outcome.status === 'applied' && outcome.result).toEqual([
        { messageId: expected, written: true },
        { messageId: expected, written: false },
      ]);
      expect(await rowsOf([expected])).toHaveLength(1);
    });

    it('refuses one step published twice with different content: it would lose an event', async () => {
      const id = randomUUID();
      await expect(
        inbox.process('lib-consumer', id, async () => {
          await outbox.publish({ exchange: EXCHANGE, routingKey: 'next', payload: { n: 1 } });
          await outbox.publish({ exchange: EXCHANGE, routingKey: 'next', payload: { n: 2 } });
        }),
      ).rejects.toThrow(/its own step/);
    });
  });

  describe('MessagingCleanup.purge', () => {
    it('deletes processed ids and sent events past their retention in bounded batches, and keeps the rest', async () => {
      const tag = randomUUID().slice(0, 8);
      await processedLongAgo('lib-retention', tag, 25);
      await db.query(
        `INSERT INTO processed_messages (consumer, message_id) VALUES ('lib-retention', $1 || '-fresh')`,
        [tag],
      );
      await db.query(
        `INSERT INTO outbox_messages (message_id, exchange, routing_key, payload, status, sent_at, created_at)
         VALUES ($1 || '-sent-old', $2, 'x', '{}', 'sent', now() - interval '8 days', now() - interval '8 days'),
                ($1 || '-pending-old', $2, 'x', '{}', 'pending', NULL, now() - interval '8 days'),
                ($1 || '-sent-fresh', $2, 'x', '{}', 'sent', now(), now())`,
        [tag, EXCHANGE],
      );

      const result = await app.get(MessagingCleanup).purge();

      expect(result.processedMessages).toBeGreaterThanOrEqual(25);
      expect(result.batches).toBeGreaterThanOrEqual(3 + 1 + 1); // 10 + 10 + 5 rows, then failures, then outbox
      const processed = await db.query<{ message_id: string }>(
        `SELECT message_id FROM processed_messages WHERE consumer = 'lib-retention' AND message_id LIKE $1`,
        [`${tag}-%`],
      );
      expect(processed).toEqual([{ message_id: `${tag}-fresh` }]);
      const outboxLeft = await db.query<{ message_id: string }>(
        `SELECT message_id FROM outbox_messages WHERE message_id LIKE $1 ORDER BY message_id`,
        [`${tag}-%`],
      );
      expect(outboxLeft.map((r) => r.message_id)).toEqual([
        `${tag}-pending-old`,
        `${tag}-sent-fresh`,
      ]);
    });
  });
});
