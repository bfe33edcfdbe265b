import type { INestApplication } from '@nestjs/common';
import { IdempotencyProblemType } from 'nestjs-pg-idempotency';
import { Client } from 'pg';
import { TestDatabase } from '../support/database';
import { ACME, postRaw, type RawResponse, uniqueCustomer, uniqueKey } from '../support/http';
import { databaseUrl } from '../support/test-app';
import { CapturedLogs, createAppBehindPgBouncer, migrate } from './pgbouncer-app';
import { describeWithPgBouncer, PgBouncer } from './pgbouncer';
import { SlowLoginProxy } from './slow-login-proxy';

// PgBouncer opens no server connection for this long after a failed login, and refuses clients
// that find none meanwhile: short here, so the retry gets through soon.
const SERVER_LOGIN_RETRY_SECONDS = 3;

/**
 * PgBouncer refuses a client it cannot give a server connection, with a FATAL 08P01 of its own,
 * and closes it: here because a RECONNECT caught a server login in flight, which PgBouncer takes
 * for a failing server. Nothing reached PostgreSQL: the app answers as for a database it cannot
 * reach (503 and Retry-After), not 500, and the retry with the same key creates the order.
 */
describeWithPgBouncer('a request PgBouncer refuses', () => {
  const logs = new CapturedLogs();
  let proxy: SlowLoginProxy;
  let bouncer: PgBouncer;
  let db: TestDatabase;
  let app: INestApplication;
  let url: string;

  beforeAll(async () => {
    await migrate(databaseUrl());
    proxy = await SlowLoginProxy.start(databaseUrl());
    bouncer = await PgBouncer.start(proxy.url, {
      poolSize: 4,
      serverLoginRetrySeconds: SERVER_LOGIN_RETRY_SECONDS,
    });
    db = new TestDatabase();
    app = await createAppBehindPgBouncer(
      { IDEMPOTENCY_CLEANUP: 'off' },
      // No order calls the provider.
      { databaseUrl: bouncer.url, providerUrl: 'http://127.0.0.1:9' },
      logs,
    );
    await app.listen(0, '127.0.0.1');
    url = await app.getUrl();
  });
  afterAll(async () => {
    await app?.close();
    await db?.close();
    await bouncer?.stop();
    await proxy?.stop();
  });

  const order = (key: string, customerId: string) =>
    postRaw(url, '/v1/orders', JSON.stringify({ customerId, amountCents: 100 }), {
      authorization: ACME.authorization,
      'idempotency-key': key,
    });

  it('answers 503 with Retry-After, claims nothing, and the retry creates the order', async () => {
    // The app's connections are logged in to PgBouncer, which keeps a server session.
    expect((await order(uniqueKey(), uniqueCustomer())).status).toBe(201);
    await leaveALoginInFlight();
    await bouncer.admin('RECONNECT');
    await serverConnectionsClosed();

    const key = uniqueKey();
    const customerId = uniqueCustomer();
    const refused = await order(key, customerId);

    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
    expect(JSON.parse(refused.text)).toMatchObject({
      type: IdempotencyProblemType.databaseUnavailable,
      status: 503,
    });
    expect(await db.keys('acme', key)).toEqual([]);

    let retry: RawResponse = refused;
    const deadline = Date.now() + (SERVER_LOGIN_RETRY_SECONDS + 10) * 1000;
    while (retry.status === 503 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      retry = await order(key, customerId);
    }
    expect(retry.status).toBe(201);
    expect(await db.orders('acme', customerId)).toHaveLength(1);
  }, 30_000);

  /**
   * Every server connection busy in a transaction of other clients, one more client waiting:
   * PgBouncer logs a new server connection in (slowly, through the proxy), and the waiting client
   * gets a released one before that login ends.
   */
  async function leaveALoginInFlight(): Promise<void> {
    const servers = (await pool()).servers;
    expect(servers).toBeLessThan(4); // room for one more: PgBouncer opens it for the waiter
    const holders = await Promise.all(Array.from({ length: servers + 1 }, () => connect()));
    const waiter = holders.pop()!;
    try {
      proxy.loginDelayMs = 1500;
      for (const holder of holders) await holder.query('BEGIN');
      const waited = waiter.query('SELECT 1');
      await eventually(async () => (await pool()).loggingIn === 1);
      for (const holder of holders) await holder.query('COMMIT');
      await waited;
      expect((await pool()).loggingIn).toBe(1);
    } finally {
      proxy.loginDelayMs = 0;
      await Promise.all([...holders, waiter].map((client) => client.end()));
    }
  }

  /** PgBouncer closes the server connections RECONNECT marked as soon as they are idle. */
  async function serverConnectionsClosed(): Promise<void> {
    await eventually(async () => {
      const { servers, loggingIn } = await pool();
      return servers + loggingIn === 0;
    });
  }

  async function connect(): Promise<Client> {
    const client = new Client({ connectionString: bouncer.url });
    await client.connect();
    return client;
  }

  async function pool(): Promise<{ servers: number; loggingIn: number }> {
    const database = new URL(bouncer.url).pathname.slice(1);
    const rows = await bouncer.admin<Record<string, string>>('SHOW POOLS');
    const row = rows.find((each) => each.database === database);
    const count = (...columns: string[]) =>
      columns.reduce((sum, column) => sum + Number(row?.[column] ?? 0), 0);
    return {
      servers: count('sv_active', 'sv_idle', 'sv_used', 'sv_tested'),
      loggingIn: count('sv_login'),
    };
  }
});

async function eventually(condition: () => Promise<boolean>, seconds = 10): Promise<void> {
  const deadline = Date.now() + seconds * 1000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`not so within ${seconds} s`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
