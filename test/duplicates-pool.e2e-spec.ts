import type { INestApplication } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { IdempotencyProblemType } from 'nestjs-pg-idempotency';
import { nextClaim } from '../libs/idempotency/test/support/next-claim';
import { TestDatabase } from './support/database';
import { ACME, postRaw, type RawResponse, uniqueCustomer, uniqueKey } from './support/http';
import { createTestApp, databaseUrl } from './support/test-app';

const DUPLICATES = 100;
const FRESH = 20;
/**
 * The holder's hold: 2 s longer than lockTimeoutMs, so that a duplicate whose request reaches the
 * interceptor up to 2 s after the holder's still times out before the holder commits. With 3 s,
 * a loaded CI run saw one of the 100 start its wait late enough to replay the commit instead.
 */
const HOLD_MS = 4000;
/**
 * The fresh creates must answer within this of being sent. Were the duplicates in lock waits on
 * the pool's connections, the creates would queue behind them until lockTimeoutMs (2 s) freed
 * some, or the holder committed.
 */
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
  const applicationName = `duplicates-pool-${randomUUID().slice(0, 8)}`;
  beforeAll(async () => {
    db = new TestDatabase();
    // Its connections carry a name of their own: other suites share the database.
    const named = new URL(databaseUrl());
    named.searchParams.set('application_name', applicationName);
    app = await createTestApp({ databaseUrl: named.toString() });
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
   * This app's connections waiting on a lock, and the database's connections in all, as
   * PostgreSQL sees them. (A lock wait's statement text would not do: pg_stat_activity keeps its
   * first kilobyte only, and a connection's first claim starts with long PREPAREs.)
   */
  const connections = async () => {
    const [row] = await db.query<{ waiting: number; total: number }>(
      `SELECT count(*) FILTER (WHERE wait_event_type = 'Lock' AND application_name = $1)::int
                AS waiting,
              count(*)::int AS total
         FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`,
      [applicationName],
    );
    return row;
  };

  it(`answers ${FRESH} fresh creates while ${DUPLICATES} duplicates wait, and the shared key makes one order`, async () => {
    const sharedKey = uniqueKey();
    const sharedCustomer = uniqueCustomer();
    const started = Date.now();
    const claimed = nextClaim();
    const holder = create(sharedKey, sharedCustomer, { 'x-demo-fault': `delay=${HOLD_MS}` });
    await claimed;
    const duplicates = Array.from({ length: DUPLICATES }, () => create(sharedKey, sharedCustomer));
    await new Promise((resolve) => setTimeout(resolve, 200)); // the duplicates are all waiting
    const during = await connections();

    const freshCustomers = Array.from({ length: FRESH }, () => uniqueCustomer());
    const freshSent = Date.now();
    const fresh = await Promise.all(
      freshCustomers.map(async (customerId) => {
        const response = await create(uniqueKey(), customerId);
        return { response, answeredAfterMs: Date.now() - freshSent };
      }),
    );
    const holderResponse = await holder;
    const holderAnsweredAfterMs = Date.now() - started;
    const duplicateResponses: RawResponse[] = await Promise.all(duplicates);

    console.log(
      `fresh creates answered after ${Math.min(...fresh.map((f) => f.answeredAfterMs))}` +
        `-${Math.max(...fresh.map((f) => f.answeredAfterMs))} ms, the key holder after ${holderAnsweredAfterMs} ms; ` +
        `while the duplicates waited: ${during.total} connections of the database, ${during.waiting} of this app in a lock wait`,
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
    const claimed = nextClaim();
    const holder = create(sharedKey, customerId, { 'x-demo-fault': 'delay=800' });
    await claimed;
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
