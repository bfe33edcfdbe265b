import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import type { BenchStats } from '../apps/payments-api/src/bench/bench-stats.service';
import { TestDatabase } from './support/database';
import { ACME, GLOBEX, uniqueCustomer, uniqueKey } from './support/http';
import { createTestApp } from './support/test-app';

/**
 * The routes `npm run bench` measures against: the baseline twin of POST /v1/orders and the
 * statement counter. The benchmark's figures mean something only if these behave as stated.
 */
describe('benchmark routes (BENCH_ROUTES=1)', () => {
  let db: TestDatabase;

  beforeAll(() => {
    db = new TestDatabase();
  });
  afterAll(async () => {
    await db.close();
  });

  describe('without benchRoutes', () => {
    let app: INestApplication;
    beforeAll(async () => {
      app = await createTestApp();
    });
    afterAll(async () => {
      await app.close();
    });

    it('serves none of POST /bench/orders, GET /bench/stats and POST /bench/allocations/start', async () => {
      const body = { customerId: uniqueCustomer(), amountCents: 100 };
      const server = app.getHttpServer();
      await request(server)
        .post('/bench/orders')
        .set('authorization', ACME.authorization)
        .send(body)
        .expect(404);
      await request(server)
        .get('/bench/stats')
        .set('authorization', ACME.authorization)
        .expect(404);
      await request(server)
        .post('/bench/allocations/start')
        .set('authorization', ACME.authorization)
        .expect(404);
    });
  });

  describe('with benchRoutes', () => {
    let app: INestApplication;
    beforeAll(async () => {
      app = await createTestApp({ benchRoutes: true });
      // Warm the pool so connection set-up is not counted.
      await request(app.getHttpServer()).get('/health').expect(200);
    });
    afterAll(async () => {
      await app.close();
    });

    const stats = async (): Promise<BenchStats> => {
      const res = await request(app.getHttpServer())
        .get('/bench/stats')
        .set('authorization', ACME.authorization);
      expect(res.status).toBe(200);
      return res.body;
    };

    it("POST /bench/orders runs the orders handler without idempotency: 201, Location, the tenant's row", async () => {
      const customerId = uniqueCustomer();
      const res = await request(app.getHttpServer())
        .post('/bench/orders')
        .set('authorization', GLOBEX.authorization)
        .send({ customerId, amountCents: 1250 });

      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({
        customerId,
        amountCents: 1250,
        currency: 'usd',
        status: 'pending',
      });
      expect(res.headers.location).toBe(`/v1/orders/${res.body.id}`);
      const orders = await db.orders('globex', customerId);
      expect(orders.map((order) => order.id)).toEqual([res.body.id]);
      expect(await db.orders('acme', customerId)).toHaveLength(0);
    });

    it('POST /bench/allocations/start and /stop sample what the requests between them allocate', async () => {
      const server = app.getHttpServer();
      const post = (path: string) =>
        request(server).post(path).set('authorization', ACME.authorization);
      await post('/bench/allocations/stop').expect(409);
      await post('/bench/allocations/start').expect(204);
      await post('/bench/allocations/start').expect(409);
      for (let i = 0; i < 100; i++) {
        await post('/bench/orders').send({ customerId: uniqueCustomer(), amountCents: 100 });
      }
      const res = await post('/bench/allocations/stop').expect(200);
      await post('/bench/allocations/stop').expect(409);
      // The orders handler's own frame carries some of the sampled bytes, directly or below it.
      interface Node {
        callFrame: { functionName: string; url: string };
        selfSize: number;
        children: Node[];
      }
      const bytesUnder = (node: Node): number =>
        node.selfSize + node.children.reduce((sum, child) => sum + bytesUnder(child), 0);
      const frames: Node[] = [];
      const visit = (node: Node): void => {
        frames.push(node);
        node.children.forEach(visit);
      };
      visit(res.body.head as Node);
      expect(bytesUnder(res.body.head as Node)).toBeGreaterThan(0);
      const handler = frames.filter(
        ({ callFrame }) =>
          callFrame.functionName === 'create' && callFrame.url.includes('orders.service'),
      );
      expect(handler.reduce((sum, node) => sum + bytesUnder(node), 0)).toBeGreaterThan(0);
    });

    it('POST /bench/bare answers behind the guard without a round trip, and counts as a request', async () => {
      const before = await stats();
      const res = await request(app.getHttpServer())
        .post('/bench/bare')
        .set('authorization', ACME.authorization)
        .send({ customerId: uniqueCustomer(), amountCents: 1250 });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ customerId: 'cus-bench', amountCents: 1250 });
      const after = await stats();
      expect(after.requests - before.requests).toBe(1);
      // GET /bench/stats itself sends none either.
      expect(after.roundTrips - before.roundTrips).toBe(0);
      await request(app.getHttpServer()).post('/bench/bare').send({}).expect(401);
    });

    it('POST /bench/orders/intercepted runs the same handler through an interceptor: 201, Location, one row', async () => {
      const customerId = uniqueCustomer();
      const before = await stats();
      const res = await request(app.getHttpServer())
        .post('/bench/orders/intercepted')
        .set('authorization', ACME.authorization)
        .send({ customerId, amountCents: 1250 });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ customerId, amountCents: 1250, currency: 'usd' });
      expect(res.headers.location).toBe(`/v1/orders/${res.body.id}`);
      // The plain handler's one INSERT: the interceptor adds no statement. (Read before the
      // test's own query below, which the counter counts too.)
      expect((await stats()).roundTrips - before.roundTrips).toBe(1);
      expect((await db.orders('acme', customerId)).map((order) => order.id)).toEqual([res.body.id]);
      await request(app.getHttpServer())
        .post('/bench/orders/intercepted')
        .set('authorization', ACME.authorization)
        .send({ customerId, amountCents: 0 })
        .expect(400);
      await request(app.getHttpServer()).post('/bench/orders/intercepted').send({}).expect(401);
    });

    it('POST /bench/bare/answered is answered by its interceptor: the bare body, behind the guard, no round trip', async () => {
      const before = await stats();
      const res = await request(app.getHttpServer())
        .post('/bench/bare/answered')
        .set('authorization', GLOBEX.authorization)
        .send({ customerId: uniqueCustomer(), amountCents: 1250 });
      expect(res.status).toBe(201);
      const bare = await request(app.getHttpServer())
        .post('/bench/bare')
        .set('authorization', GLOBEX.authorization)
        .send({});
      // Byte for byte the bare route's answer.
      expect(res.text).toBe(bare.text);
      expect(res.headers['content-type']).toBe(bare.headers['content-type']);
      const after = await stats();
      expect(after.requests - before.requests).toBe(2);
      expect(after.roundTrips - before.roundTrips).toBe(0);
      await request(app.getHttpServer()).post('/bench/bare/answered').send({}).expect(401);
    });

    it('POST /bench/peer/memory/orders runs the same handler behind the peer library: one order, its replay the same bytes', async () => {
      const customerId = uniqueCustomer();
      const key = uniqueKey();
      const before = await stats();
      const send = () =>
        request(app.getHttpServer())
          .post('/bench/peer/memory/orders')
          .set({ authorization: ACME.authorization, 'idempotency-key': key })
          .send({ customerId, amountCents: 1250 });
      const first = await send();
      expect(first.status).toBe(201);
      expect(first.headers.location).toBe(`/v1/orders/${first.body.id}`);
      const replay = await send();
      expect(replay.status).toBe(201);
      expect(replay.text).toBe(first.text);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      const after = await stats();
      expect(after.requests - before.requests).toBe(2);
      // The create's one INSERT; the peer's replay is answered from its memory.
      expect(after.roundTrips - before.roundTrips).toBe(1);
      expect((await db.orders('acme', customerId)).map((order) => order.id)).toEqual([
        first.body.id,
      ]);
      // Its Redis route is served only with BENCH_REDIS_URL.
      await request(app.getHttpServer())
        .post('/bench/peer/redis/orders')
        .set({ authorization: ACME.authorization, 'idempotency-key': uniqueKey() })
        .send({ customerId, amountCents: 1250 })
        .expect(404);
    });

    it('POST /bench/orders needs no key, and the same request twice creates two orders', async () => {
      const customerId = uniqueCustomer();
      const send = () =>
        request(app.getHttpServer())
          .post('/bench/orders')
          .set({ authorization: ACME.authorization, 'idempotency-key': uniqueKey() })
          .send({ customerId, amountCents: 300 })
          .expect(201);
      await send();
      await send();
      expect(await db.orders('acme', customerId)).toHaveLength(2);
    });

    it('POST /bench/orders validates and authenticates like POST /v1/orders', async () => {
      await request(app.getHttpServer())
        .post('/bench/orders')
        .set('authorization', ACME.authorization)
        .send({ customerId: uniqueCustomer(), amountCents: 0 })
        .expect(400)
        .expect('content-type', /application\/problem\+json/);
      await request(app.getHttpServer())
        .post('/bench/orders')
        .send({ customerId: uniqueCustomer(), amountCents: 100 })
        .expect(401);
    });

    it('GET /bench/stats counts the round trips and requests of each route', async () => {
      const body = { customerId: uniqueCustomer(), amountCents: 100 };
      const measure = async (send: () => Promise<unknown>) => {
        const before = await stats();
        await send();
        const after = await stats();
        return {
          roundTrips: after.roundTrips - before.roundTrips,
          requests: after.requests - before.requests,
          after,
        };
      };

      const create = await measure(() =>
        request(app.getHttpServer())
          .post('/v1/orders')
          .set({ authorization: ACME.authorization, 'idempotency-key': uniqueKey() })
          .send(body)
          .expect(201),
      );
      const baseline = await measure(() =>
        request(app.getHttpServer())
          .post('/bench/orders')
          .set('authorization', ACME.authorization)
          .send(body)
          .expect(201),
      );

      // The figures of the README: 3 for an idempotent create (the claim rides on START, the
      // record on COMMIT); the baseline's insert() runs alone, in one round trip.
      expect(create).toMatchObject({ roundTrips: 3, requests: 1 });
      expect(baseline).toMatchObject({ roundTrips: 1, requests: 1 });
      expect(baseline.after.busyConnections).toBe(0);
      expect(baseline.after.cpuMicroseconds).toBeGreaterThan(0);
    });
  });
});
