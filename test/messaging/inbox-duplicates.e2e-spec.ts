import { randomUUID } from 'node:crypto';
import type { AppProcess } from '../support/app-process';
import type { TestDatabase } from '../support/database';
import { eventually } from '../support/eventually';
import { describeWithBroker, TestBroker } from './support/broker';
import { createOrder, getOrder } from './support/messaging-app';
import { orderPaymentsSuite } from './support/order-payments-suite';

describeWithBroker('order-payments inbox: one message id, applied once', () => {
  let broker: TestBroker;
  let app: AppProcess;
  let db: TestDatabase;
  let queue: string;

  const suite = orderPaymentsSuite();
  beforeAll(() => ({ broker, app, db, queue } = suite));

  const paidCents = (orderId: string) => db.paidCents(orderId);
  const processedRows = async (messageId: string) =>
    (
      await db.query(
        `SELECT 1 FROM processed_messages WHERE consumer = 'order-payments' AND message_id = $1`,
        [messageId],
      )
    ).length;
  const skipped = (messageId: string) =>
    app.logs.join('').split(`${messageId} already processed`).length - 1;

  it('applies a message published twice under one message id once', async () => {
    const orderId = await createOrder(app.url);
    const messageId = `pay-${randomUUID()}`;
    await broker.send(queue, { orderId, amountCents: 1500 }, { messageId });
    await broker.send(queue, { orderId, amountCents: 1500 }, { messageId });

    // Wait for the second delivery to be settled as a duplicate, not merely for the first.
    await eventually('the duplicate to be skipped', () =>
      skipped(messageId) === 1 ? true : undefined,
    );
    expect(await paidCents(orderId)).toBe(1500);
    expect(await processedRows(messageId)).toBe(1);
    expect((await getOrder(app.url, orderId)).paidCents).toBe(1500);
    expect(await broker.stats(queue)).toMatchObject({ messageCount: 0 });
  });

  it('applies ten simultaneous copies once (prefetch 10: they run in parallel)', async () => {
    const orderId = await createOrder(app.url);
    const messageId = `pay-${randomUUID()}`;
    await broker.sendAll(
      queue,
      Array.from({ length: 10 }, () => ({
        body: { orderId, amountCents: 700 },
        options: { messageId },
      })),
    );

    await eventually('nine duplicates to be skipped', () =>
      skipped(messageId) === 9 ? true : undefined,
    );
    expect(await paidCents(orderId)).toBe(700);
    expect(await processedRows(messageId)).toBe(1);
  });

  it('takes the id from the x-message-id header when the property is absent', async () => {
    const orderId = await createOrder(app.url);
    const messageId = `pay-${randomUUID()}`;
    await broker.send(
      queue,
      { orderId, amountCents: 300 },
      { headers: { 'x-message-id': messageId } },
    );
    await broker.send(
      queue,
      { orderId, amountCents: 300 },
      { headers: { 'x-message-id': messageId } },
    );

    await eventually('the duplicate to be skipped', () =>
      skipped(messageId) === 1 ? true : undefined,
    );
    expect(await paidCents(orderId)).toBe(300);
    expect(await processedRows(messageId)).toBe(1);
  });

  it('applies two messages with different ids for the same order twice', async () => {
    const orderId = await createOrder(app.url);
    const [first, second] = [`pay-${randomUUID()}`, `pay-${randomUUID()}`];
    await broker.send(queue, { orderId, amountCents: 400 }, { messageId: first });
    await broker.send(queue, { orderId, amountCents: 400 }, { messageId: second });

    await eventually('both to be applied', async () =>
      (await paidCents(orderId)) === 800 ? true : undefined,
    );
    expect(await processedRows(first)).toBe(1);
    expect(await processedRows(second)).toBe(1);
  });
});
