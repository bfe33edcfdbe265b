import type { INestApplication } from '@nestjs/common';
import { IdempotencyProblemType } from 'nestjs-pg-idempotency';
import { AppProcess } from './support/app-process';
import { TestDatabase } from './support/database';
import { ACME, postRaw, type RawResponse, uniqueCustomer, uniqueKey } from './support/http';
import { createTestApp } from './support/test-app';

const DUPLICATES = 60;

/** Every answer but the winner's is a byte-identical replay or a 409 with Retry-After. */
function expectOneOutcome(responses: RawResponse[], orderId: string): void {
  const created = responses.filter((r) => r.status === 201);
  const inUse = responses.filter((r) => r.status === 409);
  expect(created.length + inUse.length).toBe(responses.length);
  expect(created.length).toBeGreaterThanOrEqual(1);
  for (const response of created) {
    expect(response.text).toBe(created[0].text);
    expect(response.headers.get('location')).toBe(`/v1/orders/${orderId}`);
  }
  for (const response of inUse) {
    expect(response.headers.get('retry-after')).toBe('1');
    expect(JSON.parse(response.text)).toMatchObject({ type: IdempotencyProblemType.keyInUse });
  }
  expect(JSON.parse(created[0].text).id).toBe(orderId);
}

describe('concurrent duplicates under one key', () => {
  let db: TestDatabase;
  beforeAll(() => {
    db = new TestDatabase();
  });
  afterAll(() => db.close());

  const fire = (urls: string[], key: string, body: string) =>
    Promise.all(
      Array.from({ length: DUPLICATES }, (_, i) =>
        postRaw(urls[i % urls.length], '/v1/orders', body, {
          authorization: ACME.authorization,
          'idempotency-key': key,
        }),
      ),
    );

  describe.each([['express'], ['fastify']] as const)('in one process (%s)', (adapter) => {
    let app: INestApplication;
    let url: string;
    beforeAll(async () => {
      app = await createTestApp({}, undefined, adapter);
      await app.listen(0, '127.0.0.1');
      url = await app.getUrl();
    });
    afterAll(() => app.close());

    it(`creates exactly one order for ${DUPLICATES} simultaneous identical requests`, async () => {
      const key = uniqueKey();
      const customerId = uniqueCustomer();
      const responses = await fire([url], key, JSON.stringify({ customerId, amountCents: 4200 }));

      const orders = await db.orders('acme', customerId);
      expect(orders).toHaveLength(1);
      expect(await db.keys('acme', key)).toEqual([
        expect.objectContaining({ status: 'completed', response_code: 201 }),
      ]);
      expectOneOutcome(responses, orders[0].id);
    });

    it('holds the line when the handler is slow: duplicates get 409, never a second order', async () => {
      const key = uniqueKey();
      const customerId = uniqueCustomer();
      const body = JSON.stringify({ customerId, amountCents: 4300 });
      const slow = postRaw(url, '/v1/orders', body, {
        authorization: ACME.authorization,
        'idempotency-key': key,
        'x-demo-fault': 'delay=6000', // well past the 2 s lock timeout, even on a loaded machine
      });
      await new Promise((r) => setTimeout(r, 1000)); // a head start to claim the key
      const duplicates = await fire([url], key, body);
      const first = await slow;

      const orders = await db.orders('acme', customerId);
      expect(orders).toHaveLength(1);
      expect(first.status).toBe(201);
      expect(duplicates.some((r) => r.status === 409)).toBe(true);
      expectOneOutcome([first, ...duplicates], orders[0].id);
    });
  });

  describe('across two app processes on one database', () => {
    let apps: AppProcess[];
    beforeAll(async () => {
      apps = await Promise.all([AppProcess.start(), AppProcess.start()]);
    });
    afterAll(() => Promise.all(apps.map((a) => a.stop())));

    it(`creates exactly one order for ${DUPLICATES} identical requests split across both`, async () => {
      const key = uniqueKey();
      const customerId = uniqueCustomer();
      const responses = await fire(
        apps.map((a) => a.url),
        key,
        JSON.stringify({ customerId, amountCents: 4400 }),
      );

      const orders = await db.orders('acme', customerId);
      expect(orders).toHaveLength(1);
      expectOneOutcome(responses, orders[0].id);
    });
  });
});
