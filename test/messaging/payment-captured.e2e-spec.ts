import { AppProcess } from '../support/app-process';
import { TestDatabase } from '../support/database';
import { ACME, postRaw, uniqueKey } from '../support/http';
import { databaseUrl } from '../support/test-app';
import { brokerUrl, describeWithBroker, uniqueQueue } from './support/broker';
import { createOrder } from './support/messaging-app';

/**
 * `payment.captured` goes through the outbox, written in the `charge_confirmed` phase's
 * transaction: one event per payment, even when the phase's process dies and a retry resumes.
 * (No relay here: the outbox suite owns relaying; this checks what the relay would publish.)
 */
describeWithBroker('payment.captured through the outbox', () => {
  let app: AppProcess;
  let db: TestDatabase;

  beforeAll(async () => {
    db = new TestDatabase();
    app = await AppProcess.start({
      DATABASE_URL: databaseUrl(),
      AMQP_URL: brokerUrl(),
      ORDER_PAYMENTS_QUEUE: uniqueQueue('payment-captured'),
      OUTBOX_RELAY: '0',
      IDEMPOTENCY_LEASE_SECONDS: '30',
    });
  });
  afterAll(async () => {
    await app.stop();
    await db.close();
  });

  const events = (paymentId: string) =>
    db.query<{
      exchange: string;
      routing_key: string;
      payload: Record<string, unknown>;
      message_id: string;
    }>(
      `SELECT exchange, routing_key, payload, message_id FROM outbox_messages
        WHERE routing_key = 'payment.captured' AND payload->>'paymentId' = $1`,
      [paymentId],
    );

  it('writes one event for a captured payment, none for a replay or a resumed retry', async () => {
    const orderId = await createOrder(app.url, 5000);
    const key = uniqueKey();
    const pay = (fault?: string) =>
      postRaw(app.url, '/v1/payments', JSON.stringify({ orderId, amountCents: 4000 }), {
        authorization: ACME.authorization,
        'idempotency-key': key,
        ...(fault ? { 'x-demo-fault': fault } : {}),
      });

    // Dies after the provider charged: charge_confirmed (and its event) never committed.
    await expect(pay('crash-after-charge')).rejects.toThrow();
    await app.waitForExit();
    const [payment] = await db.query<{ id: string }>(
      'SELECT id FROM payments WHERE order_id = $1',
      [orderId],
    );
    expect(await events(payment.id)).toHaveLength(0);

    await app.start();
    await db.query(`UPDATE idempotency_keys SET locked_until = now() WHERE idem_key = $1`, [key]);
    expect((await pay()).status).toBe(201);
    expect((await pay()).status).toBe(201); // a replay

    const written = await events(payment.id);
    expect(written).toEqual([
      expect.objectContaining({
        exchange: 'payments',
        routing_key: 'payment.captured',
        payload: { paymentId: payment.id, orderId, amountCents: 4000, currency: 'usd' },
      }),
    ]);
  });
});
