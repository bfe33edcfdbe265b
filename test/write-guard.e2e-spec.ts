import type { INestApplication } from '@nestjs/common';
import { IdempotencyProblemType, type WriteGuardMode } from 'nestjs-pg-idempotency';
import request from 'supertest';
import { TestDatabase } from './support/database';
import { ACME, uniqueCustomer, uniqueKey } from './support/http';
import { createTestApp } from './support/test-app';

/**
 * `X-Demo-Fault: write-outside-transaction` makes `POST /v1/orders` also save a copy of the order
 * through the default DataSource's manager: the classic bug, outside the request's transaction.
 */
describe.each([['throw'], ['off']] as const)(
  'a write outside the transaction, writeGuard %s',
  (writeGuard: WriteGuardMode) => {
    let app: INestApplication;
    let db: TestDatabase;

    beforeAll(async () => {
      app = await createTestApp({ writeGuard });
      db = new TestDatabase();
    });
    afterAll(async () => {
      await app.close();
      await db.close();
    });

    const post = (key: string, customerId: string, fault?: string) =>
      request(app.getHttpServer())
        .post('/v1/orders')
        .set({
          authorization: ACME.authorization,
          'idempotency-key': key,
          ...(fault ? { 'x-demo-fault': fault } : {}),
        })
        .send({ customerId, amountCents: 2500 });

    if (writeGuard === 'throw') {
      it('is refused: a 500 problem naming the entity, no order of the customer, no key', async () => {
        const key = uniqueKey();
        const customerId = uniqueCustomer();
        const faulted = await post(key, customerId, 'write-outside-transaction');

        expect(faulted.status).toBe(500);
        expect(faulted.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(JSON.parse(faulted.text)).toMatchObject({
          type: IdempotencyProblemType.writeOutsideTransaction,
          status: 500,
        });
        expect(JSON.parse(faulted.text).detail).toContain('Order');
        expect(JSON.parse(faulted.text).detail).toContain('POST /v1/orders');
        // Neither the copy saved outside nor the order the transaction wrote.
        expect(await db.orders(ACME.tenant, customerId)).toHaveLength(0);
        expect(await db.keys(ACME.tenant, key)).toHaveLength(0);

        // The key was released: the same request without the fault creates exactly one order.
        const retry = await post(key, customerId);
        expect(retry.status).toBe(201);
        const orders = await db.orders(ACME.tenant, customerId);
        expect(orders).toHaveLength(1);
        expect(orders[0].id).toBe(retry.body.id);
        expect(await db.keys(ACME.tenant, key)).toHaveLength(1);
      });
    } else {
      // What the guard prevents: the copy committed on its own connection, whatever the request did.
      it('is the classic bug: the copy commits beside the order, and nothing says so', async () => {
        const key = uniqueKey();
        const customerId = uniqueCustomer();
        const faulted = await post(key, customerId, 'write-outside-transaction');
        expect(faulted.status).toBe(201);
        expect(await db.orders(ACME.tenant, customerId)).toHaveLength(2);
      });
    }
  },
);
