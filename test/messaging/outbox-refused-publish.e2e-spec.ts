import { randomUUID } from 'node:crypto';
import type { INestApplication } from '@nestjs/common';
import { Propagation, TransactionHost } from '@nestjs-cls/transactional';
import { Outbox, OutboxRelay } from 'nestjs-pg-idempotency/messaging';
import { DataSource } from 'typeorm';
import { eventually } from '../support/eventually';
import { describeWithBroker, type SeenMessage, TestBroker, uniqueQueue } from './support/broker';
import { outboxAppWithoutRelay } from './support/outbox-app';
import type { RabbitMqTransportOptions } from 'nestjs-pg-idempotency/rabbitmq';

/**
 * A bare app with its own relay (run by the test) and a queue bound to `amq.topic` for
 * `routingKey`, whose deliveries `seen` records. The rows in `refusedIds` go when the suite
 * ends: a refused row would fail in every relay's batches after it.
 */
function relayedSuite(name: string, transport: Omit<RabbitMqTransportOptions, 'url'> = {}) {
  const suite = {
    app: undefined as unknown as INestApplication,
    seen: [] as SeenMessage[],
    routingKey: `${name}.${randomUUID().slice(0, 8)}`,
    refusedIds: [] as string[],
  };
  let broker: TestBroker | undefined;
  beforeAll(async () => {
    broker = await TestBroker.connect();
    const queue = await broker.queue(uniqueQueue(name), [
      { exchange: 'amq.topic', routingKey: suite.routingKey },
    ]);
    suite.seen = await broker.record(queue);
    suite.app = await outboxAppWithoutRelay({}, ['error'], transport);
  });
  afterAll(async () => {
    await suite.app
      ?.get(DataSource)
      .query(`DELETE FROM outbox_messages WHERE message_id = ANY($1)`, [suite.refusedIds]);
    await suite.app?.close();
    await broker?.close();
  });
  return suite;
}

/**
 * Events the broker refuses (their exchange does not exist) in a batch of good ones: RabbitMQ
 * closes the channel they share, and every publish in flight on it fails. The good events must
 * still go out in that relay round, and the refused ones alone back off.
 */
describeWithBroker('the outbox relay with events the broker refuses', () => {
  const relayed = relayedSuite('refused');

  it('sends the good events of the batch and backs the refused ones off alone', async () => {
    const { app, seen, routingKey, refusedIds } = relayed;
    const outbox = app.get(Outbox);
    const txHost = app.get(TransactionHost);
    const dataSource = app.get(DataSource);
    const ids = await txHost.withTransaction(Propagation.RequiresNew, async () => {
      // Many refused in a row: a missing exchange is missing for a whole kind of event.
      const missing = `test.missing.${randomUUID().slice(0, 8)}`;
      for (let n = 0; n < 20; n++) {
        const refused = await outbox.publish({
          exchange: missing,
          routingKey,
          payload: { refused: n },
        });
        refusedIds.push(refused.messageId);
      }
      const good: string[] = [];
      for (let n = 0; n < 3; n++) {
        good.push(
          (await outbox.publish({ exchange: 'amq.topic', routingKey, payload: { n } })).messageId,
        );
      }
      return { refused: [...refusedIds], good };
    });
    // This relay sends them, or another suite's: every relay shares the table, and one batch
    // may hold older due rows and leave these for the next.
    const relay = app.get(OutboxRelay);
    const copies = await eventually('the three good events on the queue', async () => {
      const started = Date.now();
      await relay.relayOnce();
      // Its rows stay locked while it publishes: not one timeout per refused row.
      expect(Date.now() - started).toBeLessThan(1_500);
      const ours = seen.filter((m) => ids.good.includes(String(m.messageId)));
      return ours.length >= 3 ? ours : undefined;
    });
    expect(new Set(copies.map((m) => m.messageId))).toEqual(new Set(ids.good));
    const rows = await dataSource.query<
      Array<{ message_id: string; status: string; last_error: string | null }>
    >(`SELECT message_id, status, last_error FROM outbox_messages WHERE message_id = ANY($1)`, [
      [...ids.refused, ...ids.good],
    ]);
    const byId = new Map(rows.map((row) => [row.message_id, row]));
    for (const id of ids.good) expect(byId.get(id)?.status).toBe('sent');
    for (const id of ids.refused) {
      expect(byId.get(id)).toMatchObject({ status: 'pending', last_error: expect.any(String) });
    }
  });
});

/**
 * Under `mandatory`, the broker refuses a routing key no queue receives (a return, not a closed
 * channel): the routable events to the same exchange, failed by another event's closed channel
 * in the same batch, must still go out.
 */
describeWithBroker('the outbox relay under mandatory publishes, with an unroutable event', () => {
  const relayed = relayedSuite('routable', { mandatory: true });

  it('sends the routable events of an exchange that also got an unroutable one', async () => {
    const { app, seen, routingKey, refusedIds } = relayed;
    const outbox = app.get(Outbox);
    const txHost = app.get(TransactionHost);
    const good = await txHost.withTransaction(Propagation.RequiresNew, async () => {
      const missing = await outbox.publish({
        exchange: `test.missing.${randomUUID().slice(0, 8)}`,
        routingKey,
        payload: { refused: 'missing' },
      });
      const unroutable = await outbox.publish({
        exchange: 'amq.topic',
        routingKey: `nobody.${randomUUID().slice(0, 8)}`,
        payload: { refused: 'unroutable' },
      });
      refusedIds.push(missing.messageId, unroutable.messageId);
      const ids: string[] = [];
      for (let n = 0; n < 2; n++) {
        ids.push(
          (await outbox.publish({ exchange: 'amq.topic', routingKey, payload: { n } })).messageId,
        );
      }
      return ids;
    });
    const relay = app.get(OutboxRelay);
    await eventually(
      'the routable events on the queue',
      async () => {
        await relay.relayOnce();
        const ours = seen.filter((m) => good.includes(String(m.messageId)));
        return ours.length >= 2 ? ours : undefined;
      },
      5_000,
    );
  });
});

/**
 * Headers amqplib cannot encode: it registers a publish's confirm before it encodes it, so one
 * such publish on the channel used to shift every later confirm onto the publish before it (an
 * event never sent marked sent, the real ones timed out). `Outbox.publish` refuses them, and a
 * row written before it did never reaches the channel.
 */
describeWithBroker('the outbox with headers AMQP cannot encode', () => {
  const relayed = relayedSuite('unencodable', { publishTimeoutMs: 2_000 });
  const UNENCODABLE: Array<[string, Record<string, string | number | boolean>]> = [
    ['a number below -2^63', { balance: -1e19 }],
    ['more than 64 KiB of headers', { trace: 'x'.repeat(70_000) }],
  ];

  it.each(UNENCODABLE)('Outbox.publish refuses %s and writes nothing', async (_, headers) => {
    const { app, routingKey } = relayed;
    const outbox = app.get(Outbox);
    await expect(
      app
        .get(TransactionHost)
        .withTransaction(Propagation.RequiresNew, () =>
          outbox.publish({ exchange: 'amq.topic', routingKey, payload: { n: 'refused' }, headers }),
        ),
    ).rejects.toThrow('Outbox.publish: the headers cannot be sent: AMQP cannot encode them');
    const rows = await app
      .get(DataSource)
      .query(`SELECT 1 FROM outbox_messages WHERE routing_key = $1`, [routingKey]);
    expect(rows).toHaveLength(0);
  });

  it('keeps a row written with such headers pending, and confirms every other event as itself', async () => {
    const { app, seen, routingKey, refusedIds } = relayed;
    const outbox = app.get(Outbox);
    const dataSource = app.get(DataSource);
    // Written as a build without the check wrote it: between good events of one batch.
    const ids = await app
      .get(TransactionHost)
      .withTransaction(Propagation.RequiresNew, async () => {
        const good = [
          (await outbox.publish({ exchange: 'amq.topic', routingKey, payload: { n: 1 } }))
            .messageId,
        ];
        for (const [n, [, headers]] of UNENCODABLE.entries()) {
          const messageId = `unencodable-${n}-${randomUUID()}`;
          await dataSource.query(
            `INSERT INTO outbox_messages (message_id, exchange, routing_key, payload, headers, next_attempt_at)
           VALUES ($1, 'amq.topic', $2, '{"n":"never"}', $3::jsonb, clock_timestamp())`,
            [messageId, routingKey, JSON.stringify(headers)],
          );
          refusedIds.push(messageId);
        }
        for (const n of [2, 3]) {
          good.push(
            (await outbox.publish({ exchange: 'amq.topic', routingKey, payload: { n } })).messageId,
          );
        }
        return good;
      });
    const relay = app.get(OutboxRelay);
    await eventually('the good events on the queue', async () => {
      await relay.relayOnce();
      return seen.filter((m) => ids.includes(String(m.messageId))).length >= 3 ? true : undefined;
    });
    const rows = await dataSource.query<
      Array<{ message_id: string; status: string; last_error: string | null }>
    >(`SELECT message_id, status, last_error FROM outbox_messages WHERE message_id = ANY($1)`, [
      [...ids, ...refusedIds],
    ]);
    const status = Object.fromEntries(rows.map((row) => [row.message_id, row.status]));
    expect(ids.map((id) => status[id])).toEqual(['sent', 'sent', 'sent']);
    expect(refusedIds.map((id) => status[id])).toEqual(['pending', 'pending']);
    expect(rows.find((row) => row.message_id === refusedIds[0])?.last_error).toMatch(
      /cannot be encoded for AMQP/,
    );
    expect(seen.filter((m) => refusedIds.includes(String(m.messageId)))).toHaveLength(0);
  });
});
