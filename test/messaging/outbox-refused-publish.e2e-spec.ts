import { randomUUID } from 'node:crypto';
import type { INestApplication } from '@nestjs/common';
import { Propagation, TransactionHost } from '@nestjs-cls/transactional';
import { Outbox, OutboxRelay } from 'nestjs-pg-idempotency/messaging';
import { DataSource } from 'typeorm';
import { eventually } from '../support/eventually';
import { describeWithBroker, type SeenMessage, TestBroker, uniqueQueue } from './support/broker';
import { outboxAppWithoutRelay } from './support/outbox-app';

/**
 * Events the broker refuses (their exchange does not exist) in a batch of good ones: RabbitMQ
 * closes the channel they share, and every publish in flight on it fails. The good events must
 * still go out in that relay round, and the refused ones alone back off.
 */
describeWithBroker('the outbox relay with events the broker refuses', () => {
  let broker: TestBroker;
  let app: INestApplication;
  let seen: SeenMessage[];
  const routingKey = `refused.${randomUUID().slice(0, 8)}`;
  const refusedIds: string[] = [];

  beforeAll(async () => {
    broker = await TestBroker.connect();
    const queue = await broker.queue(uniqueQueue('refused'), [
      { exchange: 'amq.topic', routingKey },
    ]);
    seen = await broker.record(queue);
    app = await outboxAppWithoutRelay({}, ['error']);
  });
  afterAll(async () => {
    // The refused row would fail in every relay's batches after this suite: it goes.
    await app
      ?.get(DataSource)
      .query(`DELETE FROM outbox_messages WHERE message_id = ANY($1)`, [refusedIds]);
    await app?.close();
    await broker?.close();
  });

  it('sends the good events of the batch and backs the refused ones off alone', async () => {
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
