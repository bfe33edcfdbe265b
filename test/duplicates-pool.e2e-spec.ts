import type { INestApplication } from '@nestjs/common';
import { IdempotencyProblemType } from 'nestjs-pg-idempotency';
import { TestDatabase } from './support/database';
import { ACME, postRaw, type RawResponse, uniqueCustomer, uniqueKey } from './support/http';
import { createTestApp } from './support/test-app';

const DUPLICATES = 100;
const FRESH = 20;
/**
 * The holder's hold: 2 s longer than lockTimeoutMs, so that a duplicate whose request reaches the
 * interceptor up to 2 s after the holder's still times out before the holder commits. With 3 s,
 * a loaded CI run saw one of the 100 start its wait late enough to replay the commit instead.
 */
const HOLD_MS = 4000;
/** The fresh creates must answer within this, long before the holder does. */
const FRESH_ANSWER_MS = 3000;

/**
 * A hundred retries of one slow request must not take the pool (20 connections in the demo)
 * from everyone else: duplicates of a key in flight in this process wait in memory, so creates
 * under other keys go on as usual and no connection sits in a lock wait.
 */
describe('duplicates of a slow request in one process', () => {
  let app: INestApplication;
  let url: string;
  let db: TestDatabase;
  beforeAll(async () => {
    db = new TestDatabase();
    app = await createTestApp();
    await app.listen(0, '127.0.0.1');
    url = await app.getUrl();
  });
  afterAll(async () => {
    await app.close();
    await db.close();
  });

  const create = (key: string, customerId: string, headers: Record<string, string> = {}) =>
    postRaw(url, '/v1/orders', JSON.stringify({ customerId, amountCents: 1500 }), {
      authorization: ACME.authorization,
      'idempotency-key': key,
      ...headers,
    });

  /**
   * Connections waiting on a lock in a statement about `key` (the claim carries it as a literal),
   * and the database's connections in all, as PostgreSQL sees them. Other suites share the
   * database: their own lock waits, at the same moment, are not this test's business.
   */
  const connections = async (key: string) => {
    const [row] = await db.query<{ waiting: number; total: number }>(
      `SELECT count(*) FILTER (WHERE wait_event_type = 'Lock' AND strpos(query, $1) > 0)::int
                AS waiting,
              count(*)::int AS total
         FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`,
      [key],
    );
    return row;
  };

  it(`answers ${FRESH} fresh creates while ${DUPLICATES} duplicates wait, and the shared key makes one order`, async () => {
    const sharedKey = uniqueKey();
    const sharedCustomer = uniqueCustomer();
    const started = Date.now();
    const holder = create(sharedKey, sharedCustomer, { 'x-demo-fault': `delay=${HOLD_MS}` });
    await new Promise((resolve) => setTimeout(resolve, 300)); // the holder has claimed the key
    const duplicates = Array.from({ length: DUPLICATES }, () => create(sharedKey, sharedCustomer));
    await new Promise((resolve) => setTimeout(resolve, 200)); // the duplicates are all waiting
    const during = await connections(sharedKey);

    const freshCustomers = Array.from({ length: FRESH }, () => uniqueCustomer());
    const fresh = await Promise.all(
      freshCustomers.map(async (customerId) => {
        const response = await create(uniqueKey(), customerId);
        return { response, answeredAfterMs: Date.now() - started };
      }),
    );
    const holderResponse = await holder;
    const holderAnsweredAfterMs = Date.now() - started;
    const duplicateResponses: RawResponse[] = await Promise.all(duplicates);

    console.log(
      `fresh creates answered after ${Math.min(...fresh.map((f) => f.answeredAfterMs))}` +
        `-${Math.max(...fresh.map((f) => f.answeredAfterMs))} ms, the key holder after ${holderAnsweredAfterMs} ms; ` +
        `while the duplicates waited: ${during.total} connections of the database, ${during.waiting} in a lock wait on the shared key`,
    );
    for (const { response, answeredAfterMs } of fresh) {
      expect(response.status).toBe(201);
      expect(answeredAfterMs).toBeLessThan(FRESH_ANSWER_MS);
    }
    expect(during.waiting).toBe(0);
    expect(holderResponse.status).toBe(201);
    expect(holderAnsweredAfterMs).toBeGreaterThanOrEqual(HOLD_MS);
    for (const response of duplicateResponses) {
      // lockTimeoutMs (2 s) runs out before the holder's 4 s: each duplicate gets 409 + Retry-After.
      expect(response.status).toBe(409);
      expect(response.headers.get('retry-after')).toBe('1');
      expect(JSON.parse(response.text).type).toBe(IdempotencyProblemType.keyInUse);
    }
    expect(await db.orders(ACME.tenant, sharedCustomer)).toHaveLength(1);
    for (const customerId of freshCustomers)
      expect(await db.orders(ACME.tenant, customerId)).toHaveLength(1);

    // Once the holder committed, a retry replays it.
    const retry = await create(sharedKey, sharedCustomer);
    expect(retry.status).toBe(201);
    expect(retry.text).toBe(holderResponse.text);
  });

  it('lets a waiting duplicate replay the outcome when the holder finishes within the wait', async () => {
    const sharedKey = uniqueKey();
    const customerId = uniqueCustomer();
    const holder = create(sharedKey, customerId, { 'x-demo-fault': 'delay=800' });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const duplicates = await Promise.all(
      Array.from({ length: 30 }, () => create(sharedKey, customerId)),
    );
    const first = await holder;
    expect(first.status).toBe(201);
    for (const response of duplicates) {
      expect(response.status).toBe(201);
      expect(response.text).toBe(first.text);
    }
    expect(await db.orders(ACME.tenant, customerId)).toHaveLength(1);
  });
});
