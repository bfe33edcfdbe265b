import { randomUUID } from 'node:crypto';
import type { AppProcess } from '../support/app-process';
import type { TestDatabase } from '../support/database';
import { eventually } from '../support/eventually';
import { describeWithBroker, TestBroker } from './support/broker';
import { createOrder, getOrder } from './support/messaging-app';
import { orderPaymentsSuite } from './support/order-payments-suite';

describeWithBroker(
  'crash after the commit, before the ack (a real process, killed by the fault)',
  () => {
    let broker: TestBroker;
    let app: AppProcess;
    let db: TestDatabase;
    let queue: string;

    const suite = orderPaymentsSuite();
    beforeAll(() => ({ broker, app, db, queue } = suite));

    it('gets the message again from the broker after the restart and applies it once', async () => {
      const orderId = await createOrder(app.url);
      const messageId = `pay-${randomUUID()}`;
      await broker.send(
        queue,
        { orderId, amountCents: 2500 },
        { messageId, headers: { 'x-demo-fault': 'crash-before-ack' } },
      );

      expect(await app.waitForExit()).toBeNull(); // SIGKILL: no exit code
      // The side effect and the claim committed before the crash...
      expect(await db.paidCents(orderId)).toBe(2500);
      const claim = `SELECT 1 FROM processed_messages WHERE consumer = 'order-payments' AND message_id = $1`;
      expect(await db.query(claim, [messageId])).toHaveLength(1);
      // ...but the ack never left: the broker took the message back when the connection died.
      await eventually('the broker to hold the message again', async () =>
        (await broker.stats(queue)).messageCount === 1 ? true : undefined,
      );

      await app.start(); // DEMO_FAULTS stays on: a duplicate is not applied, so nothing re-arms the crash
      await app.waitForLog(new RegExp(`${messageId} already processed, skipped`));
      expect((await getOrder(app.url, orderId)).paidCents).toBe(2500);
      expect(await db.query(claim, [messageId])).toHaveLength(1);
      await eventually('the redelivery to be acked', async () => {
        const stats = await broker.stats(queue);
        return stats.messageCount === 0 && stats.consumerCount === 1 ? true : undefined;
      });
    });
  },
);
