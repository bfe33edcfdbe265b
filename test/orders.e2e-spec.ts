import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { IdempotencyProblemType } from 'nestjs-pg-idempotency';
import { TestDatabase } from './support/database';
import { ACME, GLOBEX, uniqueCustomer, uniqueKey } from './support/http';
import { createTestApp } from './support/test-app';

describe.each([['express'], ['fastify']] as const)(
  'POST /v1/orders (atomic idempotency, in process, %s)',
  (adapter) => {
    let app: INestApplication;
    let db: TestDatabase;

    beforeAll(async () => {
      app = await createTestApp({}, undefined, adapter);
      expect(app.getHttpAdapter().getType()).toBe(adapter);
      db = new TestDatabase();
    });
    afterAll(async () => {
      await app.close();
      await db.close();
    });

    const post = (body: string | object, headers: Record<string, string> = {}) =>
      request(app.getHttpServer())
        .post('/v1/orders')
        .set('content-type', 'application/json')
        .set(headers)
        .send(typeof body === 'string' ? body : JSON.stringify(body));

    it('creates one order and records the exact response with the key', async () => {
      const key = uniqueKey();
      const customerId = uniqueCustomer();
      const res = await post(
        { customerId, amountCents: 4999 },
        { authorization: ACME.authorization, 'idempotency-key': key },
      );

      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({
        customerId,
        amountCents: 4999,
        currency: 'usd',
        reference: null,
        status: 'pending',
      });
      expect(res.headers.location).toBe(`/v1/orders/${res.body.id}`);
      const orders = await db.orders('acme', customerId);
      expect(orders).toHaveLength(1);
      expect(orders[0].id).toBe(res.body.id);
      const [row] = await db.keys('acme', key);
      expect(row).toMatchObject({
        endpoint: 'POST /v1/orders',
        status: 'completed',
        response_code: 201,
      });
      expect(row.response_body?.toString('utf8')).toBe(res.text);
      expect(row.response_headers).toMatchObject({ location: `/v1/orders/${res.body.id}` });
      expect(row.request_hash).toMatch(/^[0-9a-f]{64}$/);
    });

    it('replays the stored response byte for byte and writes nothing more', async () => {
      const key = uniqueKey();
      const customerId = uniqueCustomer();
      const headers = { authorization: ACME.authorization, 'idempotency-key': key };
      const first = await post({ customerId, amountCents: 1200, currency: 'eur' }, headers);
      const second = await post({ customerId, amountCents: 1200, currency: 'eur' }, headers);

      expect(second.status).toBe(201);
      expect(second.text).toBe(first.text);
      expect(second.headers.location).toBe(first.headers.location);
      expect(second.headers['content-type']).toBe(first.headers['content-type']);
      expect(second.headers['idempotent-replayed']).toBeUndefined();
      expect(await db.orders('acme', customerId)).toHaveLength(1);
    });

    it('treats reordered fields, other whitespace and an omitted default as the same request', async () => {
      const key = uniqueKey();
      const customerId = uniqueCustomer();
      const headers = { authorization: ACME.authorization, 'idempotency-key': key };
      const first = await post(
        `{"customerId":"${customerId}","amountCents":700,"currency":"usd"}`,
        headers,
      );
      const reordered = await post(
        `{ "currency" : "usd",\n\t"amountCents": 700.0, "customerId": "${customerId}" }`,
        headers,
      );
      const defaulted = await post(`{"amountCents":7e2,"customerId":"${customerId}"}`, headers);

      expect(first.status).toBe(201);
      expect(reordered.text).toBe(first.text);
      expect(defaulted.text).toBe(first.text);
      expect(await db.orders('acme', customerId)).toHaveLength(1);
    });

    it('answers 422 to a key reused with another body, and writes no second order', async () => {
      const key = uniqueKey();
      const customerId = uniqueCustomer();
      const headers = { authorization: ACME.authorization, 'idempotency-key': key };
      const first = await post({ customerId, amountCents: 500 }, headers);
      const reused = await post({ customerId, amountCents: 501 }, headers);

      expect(first.status).toBe(201);
      expect(reused.status).toBe(422);
      expect(reused.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(reused.body).toMatchObject({ type: IdempotencyProblemType.keyReused, status: 422 });
      expect(await db.orders('acme', customerId)).toEqual([
        expect.objectContaining({ amount_cents: 500 }),
      ]);
      const [row] = await db.keys('acme', key);
      expect(row.response_body?.toString('utf8')).toBe(first.text);
    });

    it('scopes keys by tenant: the same key under two tenants creates two orders', async () => {
      const key = uniqueKey();
      const customerId = uniqueCustomer();
      const body = { customerId, amountCents: 900 };
      const acme = await post(body, { authorization: ACME.authorization, 'idempotency-key': key });
      const globex = await post(body, {
        authorization: GLOBEX.authorization,
        'idempotency-key': key,
      });

      expect([acme.status, globex.status]).toEqual([201, 201]);
      expect(globex.body.id).not.toBe(acme.body.id);
      expect(await db.orders('acme', customerId)).toHaveLength(1);
      expect(await db.orders('globex', customerId)).toHaveLength(1);
      expect(await db.keys('acme', key)).toHaveLength(1);
      expect(await db.keys('globex', key)).toHaveLength(1);
    });

    it('names the same key in its bare and structured-field (quoted) forms', async () => {
      const key = uniqueKey();
      const customerId = uniqueCustomer();
      const first = await post(
        { customerId, amountCents: 300 },
        { authorization: ACME.authorization, 'idempotency-key': key },
      );
      const quoted = await post(
        { customerId, amountCents: 300 },
        { authorization: ACME.authorization, 'idempotency-key': `"${key}"` },
      );

      expect(quoted.text).toBe(first.text);
      expect(await db.orders('acme', customerId)).toHaveLength(1);
      expect(await db.keys('acme', key)).toHaveLength(1);
    });

    describe('rejected keys claim nothing', () => {
      it.each([
        ['missing', undefined, IdempotencyProblemType.missingKey],
        ['empty', '', IdempotencyProblemType.malformedKey],
        ['too long', 'k'.repeat(256), IdempotencyProblemType.malformedKey],
        ['non-ASCII', 'clé-ünïcode', IdempotencyProblemType.malformedKey],
        ['an unterminated quote', '"abc', IdempotencyProblemType.malformedKey],
        ['a bad escape', '"a\\bc"', IdempotencyProblemType.malformedKey],
      ])('answers 400 to a %s key', async (_case, key, type) => {
        const customerId = uniqueCustomer();
        const headers: Record<string, string> = { authorization: ACME.authorization };
        if (key !== undefined) headers['idempotency-key'] = key;
        const res = await post({ customerId, amountCents: 100 }, headers);

        expect(res.status).toBe(400);
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(res.body).toMatchObject({ type, status: 400 });
        expect(await db.orders('acme', customerId)).toHaveLength(0);
        if (key) expect(await db.keys('acme', key)).toHaveLength(0);
      });

      it('accepts a key of exactly 255 printable characters', async () => {
        const key = `k${uniqueKey()}`.padEnd(255, '~');
        const res = await post(
          { customerId: uniqueCustomer(), amountCents: 100 },
          { authorization: ACME.authorization, 'idempotency-key': key },
        );
        expect(res.status).toBe(201);
        expect(await db.keys('acme', key)).toHaveLength(1);
      });
    });

    it('answers 401 without a valid API key and writes nothing', async () => {
      const key = uniqueKey();
      const customerId = uniqueCustomer();
      const none = await post({ customerId, amountCents: 100 }, { 'idempotency-key': key });
      const wrong = await post(
        { customerId, amountCents: 100 },
        { authorization: 'Bearer demo_nobody', 'idempotency-key': key },
      );
      const inherited = await post(
        { customerId, amountCents: 100 },
        { authorization: 'Bearer __proto__', 'idempotency-key': key },
      );

      expect([none.status, wrong.status, inherited.status]).toEqual([401, 401, 401]);
      expect(none.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(
        await db.query('SELECT 1 FROM idempotency_keys WHERE idem_key = $1', [key]),
      ).toHaveLength(0);
      expect(
        await db.query('SELECT 1 FROM orders WHERE customer_id = $1', [customerId]),
      ).toHaveLength(0);
    });

    it('answers 413 to a body over 1 MiB and 400 to malformed JSON, claiming nothing', async () => {
      const key = uniqueKey();
      const customerId = uniqueCustomer();
      const headers = { authorization: ACME.authorization, 'idempotency-key': key };
      const huge = await post(
        { customerId, amountCents: 100, reference: 'x'.repeat(1024 * 1024) },
        headers,
      );
      const malformed = await post(`{"customerId": "${customerId}", "amountCents": `, headers);

      expect(huge.status).toBe(413);
      expect(huge.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(malformed.status).toBe(400);
      expect(malformed.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(await db.keys('acme', key)).toHaveLength(0);
      expect(await db.orders('acme', customerId)).toHaveLength(0);
    });

    it('stores and replays a validation error', async () => {
      const key = uniqueKey();
      const customerId = uniqueCustomer();
      const headers = { authorization: ACME.authorization, 'idempotency-key': key };
      const first = await post({ customerId, amountCents: 0, currency: 'jpy' }, headers);
      const second = await post({ customerId, amountCents: 0, currency: 'jpy' }, headers);

      expect(first.status).toBe(400);
      expect(first.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(first.body.errors).toEqual(
        expect.arrayContaining([expect.stringContaining('amountCents')]),
      );
      expect(second.status).toBe(400);
      expect(second.text).toBe(first.text);
      const [row] = await db.keys('acme', key);
      expect(row).toMatchObject({ status: 'completed', response_code: 400 });
      expect(row.response_body?.toString('utf8')).toBe(first.text);
      expect(await db.orders('acme', customerId)).toHaveLength(0);
    });

    it('stores a declined order (422 insufficient_funds) without its order row, and replays it', async () => {
      const key = uniqueKey();
      const customerId = uniqueCustomer();
      const headers = { authorization: ACME.authorization, 'idempotency-key': key };
      const first = await post({ customerId, amountCents: 1_000_001 }, headers);
      const second = await post({ customerId, amountCents: 1_000_001 }, headers);

      expect(first.status).toBe(422);
      expect(first.body).toMatchObject({ code: 'insufficient_funds', status: 422 });
      expect(first.body.type).toContain('insufficient_funds');
      expect(second.status).toBe(422);
      expect(second.text).toBe(first.text);
      // The handler inserted the order before the credit check: the savepoint undid it.
      expect(await db.orders('acme', customerId)).toHaveLength(0);
      expect(await db.keys('acme', key)).toEqual([
        expect.objectContaining({ status: 'completed', response_code: 422 }),
      ]);
    });

    it('releases the key after a transient failure: no key row, no order, and the retry runs', async () => {
      const key = uniqueKey();
      const customerId = uniqueCustomer();
      const headers = { authorization: ACME.authorization, 'idempotency-key': key };
      const failed = await post(
        { customerId, amountCents: 100 },
        { ...headers, 'x-demo-fault': 'fail-transient' },
      );

      expect(failed.status).toBe(503);
      expect(await db.keys('acme', key)).toHaveLength(0);
      expect(await db.orders('acme', customerId)).toHaveLength(0);

      const retried = await post({ customerId, amountCents: 100 }, headers);
      expect(retried.status).toBe(201);
      expect(await db.orders('acme', customerId)).toHaveLength(1);
    });

    it('refuses a second order with the same reference under another key (409), keeping one row', async () => {
      const customerId = uniqueCustomer();
      const reference = `ref-${uniqueKey()}`.slice(0, 64);
      const body = { customerId, amountCents: 100, reference };
      const first = await post(body, {
        authorization: ACME.authorization,
        'idempotency-key': uniqueKey(),
      });
      const otherKey = uniqueKey();
      const second = await post(body, {
        authorization: ACME.authorization,
        'idempotency-key': otherKey,
      });

      expect(first.status).toBe(201);
      expect(second.status).toBe(409);
      expect(second.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(second.body).toMatchObject({ code: 'duplicate_reference' });
      expect(await db.orders('acme', customerId)).toHaveLength(1);
      // 409 is not a stored outcome: the second key was released.
      expect(await db.keys('acme', otherKey)).toHaveLength(0);
    });

    it('answers an in-progress duplicate with 409 and Retry-After while the first still runs', async () => {
      const key = uniqueKey();
      const customerId = uniqueCustomer();
      const headers = { authorization: ACME.authorization, 'idempotency-key': key };
      const finished: string[] = [];
      const slow = post(
        { customerId, amountCents: 100 },
        { ...headers, 'x-demo-fault': 'delay=5000' },
      ).then((res) => {
        finished.push('first');
        return res;
      });
      // A head start for the slow one to claim the key; the rest of its 5 s is far past the 2 s lock timeout.
      await new Promise((r) => setTimeout(r, 1000));
      const duplicate = await post({ customerId, amountCents: 100 }, headers);
      finished.push('duplicate');

      expect(duplicate.status).toBe(409);
      expect(duplicate.headers['retry-after']).toBe('1');
      expect(duplicate.body).toMatchObject({ type: IdempotencyProblemType.keyInUse, status: 409 });
      const first = await slow;
      expect(finished).toEqual(['duplicate', 'first']);
      expect(first.status).toBe(201);
      expect(await db.orders('acme', customerId)).toHaveLength(1);
    });

    it('lists and reads the tenant’s orders, never another tenant’s', async () => {
      const customerId = uniqueCustomer();
      const created = await post(
        { customerId, amountCents: 100 },
        { authorization: ACME.authorization, 'idempotency-key': uniqueKey() },
      );
      const mine = await request(app.getHttpServer())
        .get(`/v1/orders/${created.body.id}`)
        .set('authorization', ACME.authorization);
      const theirs = await request(app.getHttpServer())
        .get(`/v1/orders/${created.body.id}`)
        .set('authorization', GLOBEX.authorization);
      const list = await request(app.getHttpServer())
        .get('/v1/orders')
        .set('authorization', ACME.authorization);

      expect(mine.status).toBe(200);
      expect(mine.text).toBe(created.text);
      expect(theirs.status).toBe(404);
      expect(list.body.data).toEqual(expect.arrayContaining([created.body]));
      const globexList = await request(app.getHttpServer())
        .get('/v1/orders')
        .set('authorization', GLOBEX.authorization);
      expect(globexList.body.data.map((o: { id: string }) => o.id)).not.toContain(created.body.id);
    });

    it('answers /health with 200 while the database answers', async () => {
      const res = await request(app.getHttpServer()).get('/health');
      expect(res.status).toBe(200);
      expect((await db.query('SELECT 1 AS ok'))[0]).toEqual({ ok: 1 });
    });
  },
);
