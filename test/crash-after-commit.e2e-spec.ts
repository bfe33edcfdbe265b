import { AppProcess } from './support/app-process';
import { TestDatabase } from './support/database';
import { ACME, postRaw, uniqueCustomer, uniqueKey } from './support/http';
import { newOrder, pay } from './support/payments';
import { providerCharges } from './support/provider';
import { databaseUrl } from './support/test-app';

describe.each([['express'], ['fastify']])(
  'crash after commit (a real process on %s, killed by the fault)',
  (adapter) => {
    let app: AppProcess;
    let db: TestDatabase;

    beforeAll(async () => {
      db = new TestDatabase();
      app = await AppProcess.start({ DATABASE_URL: databaseUrl(), HTTP_ADAPTER: adapter });
    });
    afterAll(async () => {
      await app.stop();
      await db.close();
    });

    it('replays the committed response to the retry after a restart; exactly one order', async () => {
      const key = uniqueKey();
      const customerId = uniqueCustomer();
      const body = JSON.stringify({
        customerId,
        amountCents: 2500,
        reference: `crash-${key}`.slice(0, 64),
      });
      const headers = { authorization: ACME.authorization, 'idempotency-key': key };

      // The process dies after COMMIT and before a byte of the response: the client sees a
      // dropped connection, exactly like a timeout on a committed payment.
      await expect(
        postRaw(app.url, '/v1/orders', body, { ...headers, 'x-demo-fault': 'crash-after-commit' }),
      ).rejects.toThrow();
      expect(await app.waitForExit()).toBeNull(); // killed by SIGKILL, no exit code

      const [order] = await db.orders('acme', customerId);
      expect(order).toBeDefined();
      const [keyRow] = await db.keys('acme', key);
      expect(keyRow).toMatchObject({ status: 'completed', response_code: 201 });

      await app.start();
      // The retry carries the fault header too: a replay runs no handler, so nothing re-arms it.
      const retry = await postRaw(app.url, '/v1/orders', body, {
        ...headers,
        'x-demo-fault': 'crash-after-commit',
      });
      expect(retry.status).toBe(201);
      expect(JSON.parse(retry.text).id).toBe(order.id);
      expect(retry.text).toBe(keyRow.response_body?.toString('utf8'));
      expect(retry.headers.get('location')).toBe(`/v1/orders/${order.id}`);
      expect(await db.orders('acme', customerId)).toHaveLength(1);
    });
  },
);

describe('crash after commit on the phased POST /v1/payments (a real process, killed by the fault)', () => {
  let app: AppProcess;
  let db: TestDatabase;

  beforeAll(async () => {
    db = new TestDatabase();
    app = await AppProcess.start({ DATABASE_URL: databaseUrl() });
  });
  afterAll(async () => {
    await app.stop();
    await db.close();
  });

  it('dies once the last phase committed; the retry after a restart replays it, one charge', async () => {
    const orderId = await newOrder(app.url);
    const key = uniqueKey();

    await expect(pay(app.url, key, orderId, 1500, 'crash-after-commit')).rejects.toThrow();
    expect(await app.waitForExit()).toBeNull(); // killed by SIGKILL, no exit code

    const [payment] = await db.payments(orderId);
    expect(payment).toMatchObject({ status: 'captured' });
    const [keyRow] = await db.keys('acme', key);
    expect(keyRow).toMatchObject({ status: 'completed', response_code: 201 });

    await app.start();
    const retry = await pay(app.url, key, orderId, 1500, 'crash-after-commit');
    expect(retry.status).toBe(201);
    expect(retry.text).toBe(keyRow.response_body?.toString('utf8'));
    expect(await db.payments(orderId)).toHaveLength(1);
    expect(await providerCharges(app.providerUrl, payment.id)).toHaveLength(1);
  });
  it('dies once a declined payment (a stored 402) committed; the retry replays the 402', async () => {
    const orderId = await newOrder(app.url);
    const key = uniqueKey();

    // Amounts ending in 13 are declined by the card processor stub.
    await expect(pay(app.url, key, orderId, 1513, 'crash-after-commit')).rejects.toThrow();
    expect(await app.waitForExit()).toBeNull();
    const [keyRow] = await db.keys('acme', key);
    expect(keyRow).toMatchObject({ status: 'completed', response_code: 402 });

    await app.start();
    const retry = await pay(app.url, key, orderId, 1513, 'crash-after-commit');
    expect(retry.status).toBe(402);
    expect(retry.text).toBe(keyRow.response_body?.toString('utf8'));
  });
});
