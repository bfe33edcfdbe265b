import type { INestApplication } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { IdempotencyProblemType } from 'nestjs-pg-idempotency';
import { Client } from 'pg';
import { createProviderStub } from '../../apps/provider-stub/src/provider-stub.app';
import { brokerUrl, TestBroker, uniqueQueue } from '../messaging/support/broker';
import { eventually } from '../support/eventually';
import { createOrder, getOrder } from '../messaging/support/messaging-app';
import { TestDatabase } from '../support/database';
import { ACME, postRaw, type RawResponse, uniqueCustomer, uniqueKey } from '../support/http';
import { providerCharges } from '../support/provider';
import { databaseUrl } from '../support/test-app';
import { CapturedLogs, createAppBehindPgBouncer, migrate } from './pgbouncer-app';
import { describeWithPgBouncer, PgBouncer } from './pgbouncer';

// Fewer server sessions than the apps hold connections: a connection's next transaction often
// lands on another session than its last, as in production behind a busy pooler.
const SERVER_POOL_SIZE = 4;
const DUPLICATES = 20;
const REPREPARE_LOG = 'prepared statements missing on this connection';
const GIVE_UP_LOG = 'Sending the statements whole from now on';

/**
 * What the apps send through PgBouncer that concerns prepared statements, counted on the driver
 * (every TypeORM query goes through `Client#query`), as test/statement-count.e2e-spec.ts does.
 * Connections to another port (the provider stub's, the assertions') are not counted.
 */
class PreparedStatementTraffic {
  prepares = 0;
  executes = 0;
  /** SQLSTATE 26000: an EXECUTE reached a session without that statement. */
  unknownStatements = 0;
  private readonly original = Client.prototype.query;

  install(port: number): void {
    const original = this.original;
    const count = (text: string) => {
      this.prepares += text.match(/PREPARE idempotency_/g)?.length ?? 0;
      this.executes += text.match(/EXECUTE idempotency_/g)?.length ?? 0;
    };
    const countUnknown = () => this.unknownStatements++;
    Client.prototype.query = function (this: Client, ...args: unknown[]) {
      if (this.port !== port) return (original as (...a: unknown[]) => unknown).apply(this, args);
      const first = args[0];
      const text =
        typeof first === 'string' ? first : String((first as { text?: string })?.text ?? '');
      count(text);
      const result = (original as (...a: unknown[]) => unknown).apply(this, args);
      if (result instanceof Promise) {
        result.catch((error: { code?: string }) => {
          if (error?.code === '26000') countUnknown();
        });
      }
      return result;
    } as typeof Client.prototype.query;
  }

  uninstall(): void {
    Client.prototype.query = this.original;
  }

  snapshot() {
    return {
      prepares: this.prepares,
      executes: this.executes,
      unknownStatements: this.unknownStatements,
    };
  }
}

const brokerStatus = process.env.TEST_BROKER_STATUS;
/** The inbox tests need RabbitMQ; without it they are skipped, saying why (REQUIRE_BROKER=1 fails the run). */
const itWithBroker = (name: string, test: () => Promise<void>) =>
  brokerStatus === 'up'
    ? it(name, test)
    : it.skip(`${name} [SKIPPED: ${brokerStatus ?? 'broker not checked'}]`, test);

/**
 * The demo driven through a real PgBouncer with `pool_mode = transaction` in front of the run's
 * PostgreSQL: the atomic orders, the phased payments and the order-payments inbox, once with
 * `preparedStatements: false` and once with the default, where the library's prepared claim
 * and record meet server sessions that never saw them (SQLSTATE 26000) and are prepared again.
 * Rows are read on a direct connection.
 */
describeWithPgBouncer('the demo behind PgBouncer in transaction mode', () => {
  const logs = new CapturedLogs();
  const traffic = new PreparedStatementTraffic();
  let bouncer: PgBouncer;
  let db: TestDatabase;
  let provider: INestApplication;
  let providerUrl: string;
  let broker: TestBroker | undefined;

  beforeAll(async () => {
    await migrate(databaseUrl());
    bouncer = await PgBouncer.start(databaseUrl(), { poolSize: SERVER_POOL_SIZE });
    // The card processor is another system: it keeps its own, direct connection.
    provider = await createProviderStub({ databaseUrl: databaseUrl(), demoFaults: true });
    await provider.listen(0, '127.0.0.1');
    providerUrl = await provider.getUrl();
    db = new TestDatabase();
    if (brokerStatus === 'up') broker = await TestBroker.connect();
    traffic.install(bouncer.port);
  });
  afterAll(async () => {
    traffic.uninstall();
    await broker?.close();
    await provider?.close();
    await db?.close();
    await bouncer?.stop();
  });

  it("runs the demo's migrations through it from several starts at once, and leaves no advisory lock held", async () => {
    const withinSeconds = <T>(promise: Promise<T>, seconds: number) =>
      Promise.race([
        promise,
        new Promise<never>((_, reject) =>
          setTimeout(() => reject(new Error(`not done in ${seconds} s`)), seconds * 1000),
        ),
      ]);
    for (let round = 0; round < 3; round++) {
      await withinSeconds(
        Promise.all([migrate(bouncer.url), migrate(bouncer.url), migrate(bouncer.url)]),
        15,
      );
    }
    // Other suites' apps take the same transaction-level lock while they migrate, for a moment;
    // a lock leaked through the pooler would stay. So: none held within a few seconds.
    const deadline = Date.now() + 10_000;
    let held = await db.query(`SELECT pid FROM pg_locks WHERE locktype = 'advisory'`);
    while (held.length > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      held = await db.query(`SELECT pid FROM pg_locks WHERE locktype = 'advisory'`);
    }
    expect(held).toEqual([]);
  });

  describe.each([
    ['off', 'off'],
    ['unset (on, the default)', undefined],
  ] as const)('IDEMPOTENCY_PREPARED_STATEMENTS %s', (_setting, preparedStatements) => {
    // Two apps: a replay in the app that recorded it comes from its memory; the other reads the row.
    let first: INestApplication;
    let second: INestApplication;
    let urls: [string, string];
    let queue: string;
    let trafficBefore: ReturnType<PreparedStatementTraffic['snapshot']>;
    let reprepareLogsBefore: number;
    let transactionsBefore: number;

    beforeAll(async () => {
      // The demo's own environment, as its process would read it; no relay, no cleanup timer.
      const env = {
        DEMO_FAULTS: '1',
        IDEMPOTENCY_CLEANUP: 'off',
        IDEMPOTENCY_PREPARED_STATEMENTS: preparedStatements,
      };
      const connections = { databaseUrl: bouncer.url, providerUrl };
      if (broker) {
        queue = await broker.queue(uniqueQueue('pgbouncer-payments'));
        await broker.queue(`${queue}.dead`);
      }
      const messaging = broker && {
        AMQP_URL: brokerUrl(),
        ORDER_PAYMENTS_QUEUE: queue,
        OUTBOX_RELAY: '0',
        INBOX_MAX_ATTEMPTS: '3',
      };
      first = await createAppBehindPgBouncer({ ...env, ...messaging }, connections, logs);
      second = await createAppBehindPgBouncer(env, connections, logs);
      urls = [await listen(first), await listen(second)];
      trafficBefore = traffic.snapshot();
      reprepareLogsBefore = logs.count(REPREPARE_LOG);
      transactionsBefore = (await bouncer.stats()).totalXactCount;
    });
    afterAll(async () => {
      await first?.close();
      await second?.close();
    });

    const order = (url: string, key: string, body: object) =>
      postRaw(url, '/v1/orders', JSON.stringify(body), {
        authorization: ACME.authorization,
        'idempotency-key': key,
      });
    const pay = (url: string, key: string, body: object, fault?: string) =>
      postRaw(url, '/v1/payments', JSON.stringify(body), {
        authorization: ACME.authorization,
        'idempotency-key': key,
        ...(fault ? { 'x-demo-fault': fault } : {}),
      });

    describe('atomic: POST /v1/orders', () => {
      it('creates one order and records the exact response with the key', async () => {
        const key = uniqueKey();
        const customerId = uniqueCustomer();
        const res = await order(urls[0], key, { customerId, amountCents: 4999 });

        expect(res.status).toBe(201);
        const orders = await db.orders('acme', customerId);
        expect(orders).toEqual([
          expect.objectContaining({ id: JSON.parse(res.text).id, amount_cents: 4999 }),
        ]);
        const [row] = await db.keys('acme', key);
        expect(row).toMatchObject({ status: 'completed', response_code: 201 });
        expect(row.response_body?.toString('utf8')).toBe(res.text);
      });

      it('replays byte for byte, from memory and from the row, and writes nothing more', async () => {
        const key = uniqueKey();
        const customerId = uniqueCustomer();
        const body = { customerId, amountCents: 1200, currency: 'eur' };
        const created = await order(urls[0], key, body);
        const fromMemory = await order(urls[0], key, body);
        const fromRow = await order(urls[1], key, body);

        expect(created.status).toBe(201);
        for (const replay of [fromMemory, fromRow]) {
          expect(replay.status).toBe(201);
          expect(replay.text).toBe(created.text);
          expect(replay.headers.get('location')).toBe(created.headers.get('location'));
        }
        expect(await db.orders('acme', customerId)).toHaveLength(1);
      });

      it(`creates one order for ${DUPLICATES} simultaneous duplicates split over two apps`, async () => {
        const key = uniqueKey();
        const customerId = uniqueCustomer();
        const responses = await Promise.all(
          Array.from({ length: DUPLICATES }, (_, i) =>
            order(urls[i % 2], key, { customerId, amountCents: 4200 }),
          ),
        );

        const orders = await db.orders('acme', customerId);
        expect(orders).toHaveLength(1);
        expect(await db.keys('acme', key)).toEqual([
          expect.objectContaining({ status: 'completed', response_code: 201 }),
        ]);
        expectOneOutcome(responses, orders[0].id);
      });

      it('answers 422 to a key reused with another body, and writes no second order', async () => {
        const key = uniqueKey();
        const customerId = uniqueCustomer();
        const created = await order(urls[0], key, { customerId, amountCents: 500 });
        const reused = await order(urls[1], key, { customerId, amountCents: 501 });

        expect(created.status).toBe(201);
        expect(reused.status).toBe(422);
        expect(JSON.parse(reused.text)).toMatchObject({
          type: IdempotencyProblemType.keyReused,
          status: 422,
        });
        expect(await db.orders('acme', customerId)).toEqual([
          expect.objectContaining({ amount_cents: 500 }),
        ]);
        expect((await db.keys('acme', key))[0].response_body?.toString('utf8')).toBe(created.text);
      });

      it('stores a 4xx (over the credit limit) with no order, and replays it from the row', async () => {
        const key = uniqueKey();
        const customerId = uniqueCustomer();
        const refused = await order(urls[0], key, { customerId, amountCents: 1_000_001 });
        const replay = await order(urls[1], key, { customerId, amountCents: 1_000_001 });

        expect(refused.status).toBe(422);
        expect(JSON.parse(refused.text)).toMatchObject({ code: 'insufficient_funds' });
        expect(replay.status).toBe(422);
        expect(replay.text).toBe(refused.text);
        expect(await db.orders('acme', customerId)).toHaveLength(0);
        expect(await db.keys('acme', key)).toEqual([
          expect.objectContaining({
            status: 'completed',
            response_code: 422,
            response_body: Buffer.from(refused.text),
          }),
        ]);
      });
    });

    describe('phased: POST /v1/payments', () => {
      it('captures a payment: one charge under a child key, payment captured, order paid; the replay charges nothing', async () => {
        const orderId = await createOrder(urls[0]);
        const key = uniqueKey();
        const res = await pay(urls[0], key, { orderId, amountCents: 1500 });

        expect(res.status).toBe(201);
        const body = JSON.parse(res.text);
        expect(body).toMatchObject({
          orderId,
          amountCents: 1500,
          status: 'captured',
          providerChargeId: expect.stringMatching(/^ch_/),
        });
        const replay = await pay(urls[1], key, { orderId, amountCents: 1500 });
        expect(replay.text).toBe(res.text);
        const charges = await providerCharges(providerUrl, body.id);
        expect(charges).toEqual([
          expect.objectContaining({ id: body.providerChargeId, amountCents: 1500 }),
        ]);
        expect(charges[0].idempotencyKey).not.toBe(key);
        expect(await db.payments(orderId)).toEqual([
          { id: body.id, status: 'captured', provider_charge_id: body.providerChargeId },
        ]);
        expect(await db.orderStatus(orderId)).toBe('paid');
        expect((await db.keys('acme', key))[0]).toMatchObject({
          status: 'completed',
          response_code: 201,
        });
      });

      it('answers 409 to a duplicate while the lease is live; one charge', async () => {
        const orderId = await createOrder(urls[0]);
        const key = uniqueKey();
        const [a, b] = await Promise.all([
          // Held 2 s: the loser claims while the winner's lease is live, even through a slow pool.
          pay(urls[0], key, { orderId, amountCents: 1600 }, 'delay=2000'),
          pay(urls[1], key, { orderId, amountCents: 1600 }, 'delay=2000'),
        ]);

        expect([a.status, b.status].sort()).toEqual([201, 409]);
        expect((a.status === 409 ? a : b).headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
        const [payment] = await db.payments(orderId);
        expect(await db.payments(orderId)).toEqual([
          expect.objectContaining({ status: 'captured' }),
        ]);
        expect(await providerCharges(providerUrl, payment.id)).toHaveLength(1);
      });

      it('provider-timeout: the retry resumes from its recovery point with the same child key; one charge', async () => {
        const orderId = await createOrder(urls[0]);
        const key = uniqueKey();
        const lost = await pay(urls[0], key, { orderId, amountCents: 2300 }, 'provider-timeout');
        expect(lost.status).toBe(504);
        const [payment] = await db.payments(orderId);
        // The provider commits the charge, then answers after we gave up.
        const [charged] = await eventually('the provider to record the charge', async () => {
          const charges = await providerCharges(providerUrl, payment.id);
          return charges.length > 0 ? charges : undefined;
        });

        const retry = await pay(urls[1], key, { orderId, amountCents: 2300 });
        expect(retry.status).toBe(201);
        expect(JSON.parse(retry.text)).toMatchObject({
          id: payment.id,
          providerChargeId: charged.id,
        });
        expect(await providerCharges(providerUrl, payment.id)).toEqual([
          expect.objectContaining({ id: charged.id, idempotencyKey: charged.idempotencyKey }),
        ]);
        expect(await db.payments(orderId)).toEqual([
          { id: payment.id, status: 'captured', provider_charge_id: charged.id },
        ]);
      });

      it('stores a decline (402) and replays it; the order stays unpaid', async () => {
        const orderId = await createOrder(urls[0]);
        const key = uniqueKey();
        const declined = await pay(urls[0], key, { orderId, amountCents: 1313 });
        const replay = await pay(urls[1], key, { orderId, amountCents: 1313 });

        expect(declined.status).toBe(402);
        expect(JSON.parse(declined.text)).toMatchObject({ code: 'payment_declined' });
        expect(replay.text).toBe(declined.text);
        expect(await db.payments(orderId)).toEqual([
          expect.objectContaining({ status: 'declined' }),
        ]);
        expect(await db.orderStatus(orderId)).toBe('pending');
      });
    });

    describe('inbox: the order-payments consumer', () => {
      const processedRows = async (messageId: string) =>
        (
          await db.query(
            `SELECT 1 FROM processed_messages WHERE consumer = 'order-payments' AND message_id = $1`,
            [messageId],
          )
        ).length;
      const skipped = (messageId: string) => logs.count(`${messageId} already processed`);

      itWithBroker('applies a message delivered twice under one id once', async () => {
        const orderId = await createOrder(urls[0]);
        const messageId = `pay-${randomUUID()}`;
        await broker!.send(queue, { orderId, amountCents: 1500 }, { messageId });
        await broker!.send(queue, { orderId, amountCents: 1500 }, { messageId });

        await eventually('the duplicate to be skipped', () =>
          skipped(messageId) === 1 ? true : undefined,
        );
        expect(await db.paidCents(orderId)).toBe(1500);
        expect(await processedRows(messageId)).toBe(1);
        expect((await getOrder(urls[1], orderId)).paidCents).toBe(1500);
      });

      itWithBroker('applies ten simultaneous copies once', async () => {
        const orderId = await createOrder(urls[0]);
        const messageId = `pay-${randomUUID()}`;
        await broker!.sendAll(
          queue,
          Array.from({ length: 10 }, () => ({
            body: { orderId, amountCents: 700 },
            options: { messageId },
          })),
        );

        await eventually('nine duplicates to be skipped', () =>
          skipped(messageId) === 9 ? true : undefined,
        );
        expect(await db.paidCents(orderId)).toBe(700);
        expect(await processedRows(messageId)).toBe(1);
      });
    });

    describe('prepared statements', () => {
      /** Hands every connection new server sessions: PgBouncer closes the old ones as they come free. */
      async function createAfterReconnect(): Promise<void> {
        // Sequential requests take the same pooled connection; this one has prepared, if it may.
        expect(
          (await order(urls[0], uniqueKey(), { customerId: uniqueCustomer(), amountCents: 100 }))
            .status,
        ).toBe(201);
        await bouncer.reconnect();
        const customerId = uniqueCustomer();
        expect((await order(urls[0], uniqueKey(), { customerId, amountCents: 100 })).status).toBe(
          201,
        );
        expect(await db.orders('acme', customerId)).toHaveLength(1);
      }

      if (preparedStatements === 'off') {
        it('sends no PREPARE or EXECUTE, so a change of server session costs nothing', async () => {
          await createAfterReconnect();
          const sent = diff(traffic.snapshot(), trafficBefore);

          expect(sent).toEqual({ prepares: 0, executes: 0, unknownStatements: 0 });
          expect(logs.count(REPREPARE_LOG) - reprepareLogsBefore).toBe(0);
          expect((await bouncer.stats()).totalXactCount).toBeGreaterThan(transactionsBefore);
        });
      } else {
        it('prepares again where a server session lacks the statements, until the third loss turns preparing off', async () => {
          // Every RECONNECT hands the connections new server sessions; the app prepares again
          // until a third connection lost its statements, then sends the statements whole.
          // Four creates at once take several of its connections.
          let cycles = 0;
          for (; cycles < 10; cycles++) {
            const before = traffic.snapshot();
            await createAfterReconnect();
            const created = await Promise.all(
              Array.from({ length: 4 }, () =>
                order(urls[0], uniqueKey(), { customerId: uniqueCustomer(), amountCents: 100 }),
              ),
            );
            expect(created.map((response) => response.status)).toEqual([201, 201, 201, 201]);
            const cycle = diff(traffic.snapshot(), before);
            if (cycle.prepares === 0 && cycle.executes === 0) break;
          }
          const sent = diff(traffic.snapshot(), trafficBefore);
          const reprepares = logs.count(REPREPARE_LOG) - reprepareLogsBefore;

          expect(cycles).toBeLessThan(10);
          expect(logs.count(GIVE_UP_LOG)).toBeGreaterThanOrEqual(1);
          // The app gives up after its third loss, whichever connections lost the statements: three
          // re-prepares, plus at most three of the four parallel creates sent with EXECUTE before
          // it gave up; never one per request.
          expect(reprepares).toBeGreaterThanOrEqual(1);
          expect(reprepares).toBeLessThanOrEqual(6);
          // Each was an EXECUTE refused at START TRANSACTION and recovered; none failed a request.
          expect(sent.unknownStatements).toBe(reprepares);
          expect(sent.prepares).toBeGreaterThanOrEqual(reprepares);
          expect((await bouncer.stats()).totalXactCount).toBeGreaterThan(transactionsBefore);
        });
      }
    });
  });
});

async function listen(app: INestApplication): Promise<string> {
  await app.listen(0, '127.0.0.1');
  return app.getUrl();
}

function diff<T extends Record<string, number>>(after: T, before: T): T {
  return Object.fromEntries(
    Object.entries(after).map(([name, value]) => [name, value - before[name]]),
  ) as T;
}

/** Every answer but the winner's is a byte-identical replay or a 409 with Retry-After. */
function expectOneOutcome(responses: RawResponse[], orderId: string): void {
  const created = responses.filter((r) => r.status === 201);
  const inUse = responses.filter((r) => r.status === 409);
  expect(created.length + inUse.length).toBe(responses.length);
  expect(created.length).toBeGreaterThanOrEqual(1);
  for (const response of created) expect(response.text).toBe(created[0].text);
  for (const response of inUse)
    expect(JSON.parse(response.text)).toMatchObject({ type: IdempotencyProblemType.keyInUse });
  expect(JSON.parse(created[0].text).id).toBe(orderId);
}
