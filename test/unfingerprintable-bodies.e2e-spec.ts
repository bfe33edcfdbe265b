import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { IdempotencyProblemType, MAX_BODY_DEPTH } from 'nestjs-pg-idempotency';
import { BODY_LIMIT_BYTES } from '../apps/payments-api/src/http-adapter';
import { TestDatabase } from './support/database';
import { ACME, uniqueCustomer, uniqueKey } from './support/http';
import { createTestApp } from './support/test-app';

/** Bodies JSON.parse accepts but no canonical JSON can hold: each must be a 400 before any claim. */
const hostile: [string, (customerId: string) => string][] = [
  ['a number that overflows to Infinity', (c) => `{"customerId":"${c}","amountCents":1e400}`],
  [
    '100,000 nested arrays',
    (c) => `{"customerId":"${c}","amountCents":${'['.repeat(100_000)}${']'.repeat(100_000)}}`,
  ],
  [
    '50,000 nested objects',
    (c) => `{"customerId":"${c}","amountCents":${'{"a":'.repeat(50_000)}1${'}'.repeat(50_000)}}`,
  ],
  [
    'one level past the bound',
    (c) =>
      `{"customerId":"${c}","amountCents":${'['.repeat(MAX_BODY_DEPTH)}${']'.repeat(MAX_BODY_DEPTH)}}`,
  ],
];

describe.each([['express'], ['fastify']] as const)(
  'POST /v1/orders with a body the fingerprint refuses (%s)',
  (adapter) => {
    let app: INestApplication;
    let db: TestDatabase;

    beforeAll(async () => {
      app = await createTestApp({}, undefined, adapter);
      db = new TestDatabase();
    });
    afterAll(async () => {
      await app.close();
      await db.close();
    });

    const post = (body: string, key: string) =>
      request(app.getHttpServer())
        .post('/v1/orders')
        .set('content-type', 'application/json')
        .set({ authorization: ACME.authorization, 'idempotency-key': key })
        .send(body);

    it.each(hostile)(
      'answers 400 to %s, claiming nothing and writing no order',
      async (_case, body) => {
        const key = uniqueKey();
        const customerId = uniqueCustomer();
        const text = body(customerId);
        expect(Buffer.byteLength(text)).toBeLessThan(BODY_LIMIT_BYTES);

        const res = await post(text, key);

        expect(res.status).toBe(400);
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(res.body).toMatchObject({
          type: IdempotencyProblemType.unfingerprintableRequest,
          status: 400,
        });
        expect(
          await db.query('SELECT 1 FROM idempotency_keys WHERE idem_key = $1', [key]),
        ).toHaveLength(0);
        expect(
          await db.query('SELECT 1 FROM orders WHERE customer_id = $1', [customerId]),
        ).toHaveLength(0);
      },
    );

    it('counts the refusals as unfingerprintable_request in the metrics', async () => {
      await post(hostile[0][1](uniqueCustomer()), uniqueKey()).expect(400);
      const metrics = await request(app.getHttpServer()).get('/metrics').expect(200);
      expect(metrics.text).toMatch(
        /idempotency_requests_total\{[^}]*outcome="unfingerprintable_request"[^}]*\} [1-9]/,
      );
    });

    it('accepts a body exactly as deep as the bound: validation, not the fingerprint, refuses it', async () => {
      // amountCents must be a number: the depth goes into a field the DTO forbids, so the
      // handler's validation answers (400, stored) after the fingerprint accepted the body.
      const customerId = uniqueCustomer();
      const key = uniqueKey();
      const deep = `${'['.repeat(MAX_BODY_DEPTH - 1)}${']'.repeat(MAX_BODY_DEPTH - 1)}`;
      const res = await post(
        `{"customerId":"${customerId}","amountCents":100,"extra":${deep}}`,
        key,
      );

      expect(res.status).toBe(400);
      expect(res.body.type).toBe('about:blank');
      expect(res.body.errors).toEqual(expect.arrayContaining([expect.stringContaining('extra')]));
      expect(await db.keys('acme', key)).toEqual([
        expect.objectContaining({ status: 'completed', response_code: 400 }),
      ]);
    });
  },
);

describe('POST /v1/orders with a __proto__ key (express: Fastify refuses such bodies itself)', () => {
  let app: INestApplication;
  let db: TestDatabase;

  beforeAll(async () => {
    app = await createTestApp();
    db = new TestDatabase();
  });
  afterAll(async () => {
    await app.close();
    await db.close();
  });

  it('fingerprints it as an ordinary key: the same key without it is another request', async () => {
    const key = uniqueKey();
    const customerId = uniqueCustomer();
    const headers = {
      authorization: ACME.authorization,
      'idempotency-key': key,
      'content-type': 'application/json',
    };
    const send = (body: string) =>
      request(app.getHttpServer()).post('/v1/orders').set(headers).send(body);

    const first = await send(
      `{"customerId":"${customerId}","amountCents":100,"__proto__":{"amountCents":1}}`,
    );
    const again = await send(
      `{"__proto__":{"amountCents":1},"amountCents":100,"customerId":"${customerId}"}`,
    );
    const without = await send(`{"customerId":"${customerId}","amountCents":100}`);

    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ customerId, amountCents: 100 });
    expect(again.text).toBe(first.text);
    expect(without.status).toBe(422);
    expect(without.body).toMatchObject({ type: IdempotencyProblemType.keyReused });
    expect(await db.orders('acme', customerId)).toHaveLength(1);
    expect(({} as Record<string, unknown>).amountCents).toBeUndefined();
  });
});
