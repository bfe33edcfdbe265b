import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import { connect } from 'amqplib';
import type { AppProcess } from '../support/app-process';
import type { TestDatabase } from '../support/database';
import { brokerUrl, describeWithBroker, TestBroker } from './support/broker';
import { createOrder, startMessagingApp } from './support/messaging-app';
import { orderPaymentsSuite } from './support/order-payments-suite';

describeWithBroker(
  'order-payments dead letters: rejected and poison messages are parked, not applied',
  () => {
    let broker: TestBroker;
    let app: AppProcess;
    let db: TestDatabase;
    let queue: string;
    let deadLetters: string;

    const suite = orderPaymentsSuite({ maxAttempts: 3 });
    beforeAll(() => ({ broker, app, db, queue, deadLetters } = suite));

    const paidCents = (orderId: string) => db.paidCents(orderId);
    const processedRows = async (messageId: string) =>
      (await db.query(`SELECT 1 FROM processed_messages WHERE message_id = $1`, [messageId]))
        .length;
    const forOrder = (orderId: string) => (message: { body: unknown }) =>
      (message.body as { orderId?: string }).orderId === orderId;

    it('dead-letters a message without a message id and applies nothing', async () => {
      const orderId = await createOrder(app.url);
      await broker.send(queue, { orderId, amountCents: 900 }); // no messageId, no x-message-id

      const parked = await broker.take(deadLetters, forOrder(orderId));
      expect(parked.headers).toMatchObject({
        'x-inbox-reason': 'missing-message-id',
        'x-inbox-consumer': 'order-payments',
        'x-original-routing-key': queue,
      });
      expect(parked.body).toEqual({ orderId, amountCents: 900 });
      expect(await paidCents(orderId)).toBe(0);
      expect(await broker.stats(queue)).toMatchObject({ messageCount: 0 });
    });

    it.each([
      ['bytes that are not UTF-8 text', Buffer.from([0x61, 0xff]), 'not UTF-8 text'],
      ['an integer beyond 2^53', { '!': 'double', value: 2 ** 60 }, 'beyond 2^53'],
    ])(
      'dead-letters a message whose x-message-id is %s, read inexactly it could merge two ids',
      async (_, header, detail) => {
        const orderId = await createOrder(app.url);
        await broker.send(
          queue,
          { orderId, amountCents: 800 },
          { headers: { 'x-message-id': header } },
        );

        const parked = await broker.take(deadLetters, forOrder(orderId));
        expect(parked.headers).toMatchObject({
          'x-inbox-reason': 'missing-message-id',
          'x-inbox-detail': expect.stringContaining(detail),
        });
        expect(await paidCents(orderId)).toBe(0);
      },
    );

    it('dead-letters a message whose headers amqplib cannot encode again, keeping them as doubles', async () => {
      const orderId = await createOrder(app.url);
      // A double, as a Java or Python producer sends it: amqplib decodes it to a number that it
      // would encode as an out-of-range 64-bit integer.
      await broker.send(
        queue,
        { orderId, amountCents: 700 },
        { headers: { balance: { '!': 'double', value: -1e19 } } },
      );

      const parked = await broker.take(deadLetters, forOrder(orderId));
      expect(parked.headers).toMatchObject({
        balance: -1e19,
        'x-inbox-reason': 'missing-message-id',
      });
      expect(parked.headers).not.toHaveProperty('x-inbox-dropped-headers');
      expect(await paidCents(orderId)).toBe(0);
      expect(await broker.stats(queue)).toMatchObject({ messageCount: 0 });
    });

    it('dead-letters a message whose property amqplib cannot encode again, leaving it out', async () => {
      const orderId = await createOrder(app.url);
      // A Go or Java producer's 200 bytes that are not UTF-8: amqplib reads each as U+FFFD,
      // three bytes, so the copy's `type` would be 600 bytes, over AMQP's 255.
      const producer = await connect(brokerUrl());
      const socket = (producer as unknown as { connection: { stream: Socket } }).connection.stream;
      const marker = Buffer.from('~'.repeat(200), 'latin1');
      const write = socket.write.bind(socket) as (chunk: unknown, ...rest: unknown[]) => boolean;
      (socket as unknown as { write: typeof write }).write = (chunk, ...rest) => {
        const at = Buffer.isBuffer(chunk) ? chunk.indexOf(marker) : -1;
        if (at >= 0) (chunk as Buffer).fill(0xff, at, at + marker.length);
        return write(chunk, ...rest);
      };
      try {
        const channel = await producer.createConfirmChannel();
        channel.sendToQueue(queue, Buffer.from(JSON.stringify({ orderId, amountCents: 600 })), {
          contentType: 'application/json',
          type: '~'.repeat(200),
        });
        await channel.waitForConfirms();
      } finally {
        await producer.close();
      }

      const parked = await broker.take(deadLetters, forOrder(orderId));
      expect(parked.headers).toMatchObject({
        'x-inbox-reason': 'missing-message-id',
        'x-inbox-dropped-properties': 'type',
      });
      expect(await paidCents(orderId)).toBe(0);
    });

    it('dead-letters an unprocessable payload at once, without retrying it', async () => {
      const orderId = await createOrder(app.url);
      const messageId = `pay-${randomUUID()}`;
      await broker.send(queue, { orderId, amountCents: -5 }, { messageId });

      const parked = await broker.take(deadLetters, (m) => m.messageId === messageId);
      expect(parked.headers).toMatchObject({
        'x-inbox-reason': 'unprocessable',
        'x-inbox-attempts': 0,
      });
      expect(String(parked.headers['x-inbox-detail'])).toContain('amountCents');
      expect(await paidCents(orderId)).toBe(0);
      expect(await processedRows(messageId)).toBe(0);
    });

    it('dead-letters a payment for an unknown order', async () => {
      const messageId = `pay-${randomUUID()}`;
      const orderId = randomUUID();
      await broker.send(queue, { orderId, amountCents: 100 }, { messageId });

      const parked = await broker.take(deadLetters, (m) => m.messageId === messageId);
      expect(parked.headers).toMatchObject({ 'x-inbox-reason': 'unprocessable' });
      expect(String(parked.headers['x-inbox-detail'])).toContain(orderId);
      expect(await processedRows(messageId)).toBe(0);
    });

    it('retries a failing message, then dead-letters it after INBOX_MAX_ATTEMPTS (3); its writes never stick', async () => {
      const orderId = await createOrder(app.url);
      const messageId = `pay-${randomUUID()}`;
      await broker.send(
        queue,
        { orderId, amountCents: 1200 },
        { messageId, headers: { 'x-demo-fault': 'fail-transient' } },
      );

      const parked = await broker.take(deadLetters, (m) => m.messageId === messageId);
      expect(parked.headers).toMatchObject({
        'x-inbox-reason': 'max-attempts',
        'x-inbox-attempts': 3,
      });
      const [failures] = await db.query<{ attempts: number }>(
        `SELECT attempts FROM inbox_failures WHERE consumer = 'order-payments' AND message_id = $1`,
        [messageId],
      );
      expect(failures.attempts).toBe(3);
      // Each attempt added 1200 inside its transaction, and each rolled back.
      expect(await paidCents(orderId)).toBe(0);
      expect(await processedRows(messageId)).toBe(0);
      expect(await broker.stats(queue)).toMatchObject({ messageCount: 0 });
    });
  },
);

describeWithBroker('the demo on its default names', () => {
  let broker: TestBroker;
  let app: AppProcess;

  beforeAll(async () => {
    broker = await TestBroker.connect();
    app = await startMessagingApp({ queue: 'order-payments' });
  });
  afterAll(async () => {
    await app?.stop();
    await broker?.close();
  });

  it('consumes order-payments and dead-letters to order-payments.dead; payments is a topic exchange', async () => {
    // Other systems publish and read by these names. Only this suite uses them in the run, and
    // `take` hands back any message on them that is not this test's.
    await broker.channel.checkExchange('payments'); // 404 (and a throw) if the demo did not declare it
    await broker.channel.assertExchange('payments', 'topic', { durable: true }); // 406 if it is not a durable topic exchange
    await broker.channel.checkQueue('order-payments.dead');
    expect((await broker.stats('order-payments')).consumerCount).toBeGreaterThanOrEqual(1);
    const orderId = await createOrder(app.url);
    await broker.send('order-payments', { orderId, amountCents: 100 });

    const parked = await broker.take(
      'order-payments.dead',
      (m) => (m.body as { orderId?: string }).orderId === orderId,
    );
    expect(parked.headers).toMatchObject({ 'x-inbox-reason': 'missing-message-id' });
  });
});
