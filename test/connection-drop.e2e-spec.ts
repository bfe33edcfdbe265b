import { randomUUID } from 'node:crypto';
import { IdempotencyProblemType } from 'nestjs-pg-idempotency';
import { AppProcess } from './support/app-process';
import { TestDatabase } from './support/database';
import { ACME, postRaw, uniqueCustomer, uniqueKey } from './support/http';
import { databaseUrl } from './support/test-app';

/** How long the request sleeps in its transaction: the time there is to find and cut it. */
const HOLD_MS = 5000;

describe('the database connection drops in the middle of a request', () => {
  const applicationName = `conn-drop-${randomUUID().slice(0, 8)}`;
  let app: AppProcess;
  let db: TestDatabase;

  beforeAll(async () => {
    db = new TestDatabase();
    const url = new URL(databaseUrl());
    url.searchParams.set('application_name', applicationName);
    app = await AppProcess.start({ DATABASE_URL: url.toString() });
  });
  afterAll(async () => {
    await app.stop();
    await db.close();
  });

  it('releases the key with everything else, and the retry creates the order once', async () => {
    const key = uniqueKey();
    const customerId = uniqueCustomer();
    const body = JSON.stringify({ customerId, amountCents: 100 });
    const headers = { authorization: ACME.authorization, 'idempotency-key': key };

    const pending = postRaw(app.url, '/v1/orders', body, {
      ...headers,
      'x-demo-fault': `delay=${HOLD_MS}`,
    });
    // Wait until the claim is made and the handler sleeps inside the transaction, then cut it.
    let terminated = 0;
    const deadline = Date.now() + HOLD_MS - 500;
    while (terminated === 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      const rows = await db.query<{ ok: boolean }>(
        `SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity
          WHERE application_name = $1 AND state = 'idle in transaction'`,
        [applicationName],
      );
      terminated = rows.filter((r) => r.ok).length;
    }
    expect(terminated).toBe(1);

    const failed = await pending;
    // A cut connection is a transient failure: 503 with Retry-After, in the library's words.
    expect(failed.status).toBe(503);
    expect(failed.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(failed.headers.get('retry-after')).toBe('1');
    expect(JSON.parse(failed.text).type).toBe(IdempotencyProblemType.databaseUnavailable);
    expect(await db.keys('acme', key)).toHaveLength(0);
    expect(await db.orders('acme', customerId)).toHaveLength(0);

    const retry = await postRaw(app.url, '/v1/orders', body, headers);
    expect(retry.status).toBe(201);
    expect(await db.orders('acme', customerId)).toHaveLength(1);
    expect(await db.keys('acme', key)).toEqual([expect.objectContaining({ status: 'completed' })]);
  });
});
