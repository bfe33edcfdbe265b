import { randomUUID } from 'node:crypto';
import type { INestApplication } from '@nestjs/common';
import { Propagation, TransactionHost } from '@nestjs-cls/transactional';
import { Outbox, type OutboxMessage, OutboxRelay } from 'nestjs-pg-idempotency/messaging';
import { DataSource } from 'typeorm';
import { withAppTypeParsers } from '../../libs/idempotency/test/support/app-type-parsers';
import { eventually, sleep } from '../support/eventually';
import { describeWithBroker, type SeenMessage, TestBroker, uniqueQueue } from './support/broker';
import { outboxAppWithoutRelay } from './support/outbox-app';

/**
 * The outbox reads text of its own (each due row as one JSON text, its comparisons as words):
 * what it writes and publishes does not depend on the type parsers of the app it runs in. A bare
 * app on the library with the RabbitMQ transport; the test calls the relay itself.
 */
describeWithBroker('the outbox under the app’s own type parsers', () => {
  let broker: TestBroker;
  let app: INestApplication;
  let seen: SeenMessage[];
  const published: OutboxMessage[] = [];
  const routingKey = `parsers.${randomUUID().slice(0, 8)}`;

  beforeAll(async () => {
    broker = await TestBroker.connect();
    // amq.topic: every broker has it, so rows of this suite a relay elsewhere sends never fail.
    const queue = await broker.queue(uniqueQueue('parsers'), [
      { exchange: 'amq.topic', routingKey },
    ]);
    seen = await broker.record(queue);
    app = await outboxAppWithoutRelay(
      { onPublished: (messages) => void published.push(...messages) },
      ['error', 'warn'],
    );
  });
  afterAll(async () => {
    await app?.close();
    await broker?.close();
  });

  it('publishes the payload, headers and creation time the row holds', async () => {
    const outbox = app.get(Outbox);
    const relay = app.get(OutboxRelay);
    const txHost = app.get(TransactionHost);
    const dataSource = app.get(DataSource);
    const payload = { orderId: randomUUID(), amountCents: 4200, note: 'zoë ✓', lines: [1, 2] };
    const before = Date.now();
    // Every relay of the run shares the table: one of another suite may claim this row first
    // (this relay then skips it), or a batch of older rows may leave it for the next. A row sent
    // elsewhere says nothing about this process, so write another; one still pending is
    // relayed again; one that failed here fails the test.
    let ours: OutboxMessage | undefined;
    for (let attempt = 0; attempt < 5 && !ours; attempt++) {
      const { messageId } = await txHost.withTransaction(Propagation.RequiresNew, () =>
        outbox.publish({
          exchange: 'amq.topic',
          routingKey,
          payload,
          headers: { 'x-tenant': 'acme' },
        }),
      );
      const deadline = Date.now() + 10_000;
      for (;;) {
        await withAppTypeParsers(() => relay.relayOnce());
        ours = published.find((message) => message.messageId === messageId);
        const [row] = await dataSource.query<Array<{ status: string; last_error: string | null }>>(
          `SELECT status, last_error FROM outbox_messages WHERE message_id = $1`,
          [messageId],
        );
        if (ours || row?.status === 'sent') break;
        if (row?.last_error) throw new Error(`the relay did not send the row: ${row.last_error}`);
        if (Date.now() > deadline) throw new Error('the row stayed pending for 10 s');
        await sleep(50);
      }
    }
    if (!ours) throw new Error('another relay sent every row of this test before it could');

    expect(ours.payload).toEqual(payload);
    expect(ours.headers).toEqual({ 'x-tenant': 'acme' });
    expect(ours.attempts).toBe(0);
    expect(ours.createdAt).toBeInstanceOf(Date);
    expect(ours.createdAt.getTime()).toBeGreaterThanOrEqual(before - 1_000);
    expect(ours.createdAt.getTime()).toBeLessThanOrEqual(Date.now() + 1_000);
    const { messageId } = ours;
    const copy = await eventually('the broker’s copy', () =>
      seen.find((m) => m.messageId === messageId),
    );
    expect(copy.body).toEqual(payload);
    expect(copy.headers).toMatchObject({ 'x-tenant': 'acme' });
  });

  it('still refuses a message id written again with other content', async () => {
    // The comparison comes back as a word, not a boolean the app could parse as a string.
    const outbox = app.get(Outbox);
    const txHost = app.get(TransactionHost);
    const messageId = randomUUID();
    const publish = (payload: unknown) =>
      withAppTypeParsers(() =>
        txHost.withTransaction(Propagation.RequiresNew, () =>
          outbox.publish({ exchange: 'amq.topic', routingKey, payload, messageId }),
        ),
      );
    await expect(publish({ n: 1 })).resolves.toEqual({ messageId, written: true });
    await expect(publish({ n: 1 })).resolves.toEqual({ messageId, written: false });
    await expect(publish({ n: 2 })).rejects.toThrow(/already written with other content/);
    const rows = await app
      .get(DataSource)
      .query<Array<{ payload: unknown }>>(
        `SELECT payload FROM outbox_messages WHERE message_id = $1`,
        [messageId],
      );
    expect(rows).toEqual([{ payload: { n: 1 } }]);
  });
});
