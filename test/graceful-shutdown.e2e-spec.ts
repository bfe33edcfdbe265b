import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { Client } from 'pg';
import { findFreePort, startEmbeddedPostgres } from '#tools/embedded-postgres';
import { eventually } from './support/eventually';
import { ACME, postRaw, uniqueCustomer, uniqueKey } from './support/http';
import { ProcessGroup } from './support/process-group';

const MAIN = resolve(__dirname, '../dist/apps/payments-api/apps/payments-api/src/main.js');

/**
 * Resolves once a request holds a transaction open in the demo's embedded PostgreSQL: the slow
 * request has been read and is inside its delay, whatever the machine's load.
 */
async function transactionOpen(pgPort: number): Promise<void> {
  const client = new Client({
    connectionString: `postgres://postgres:postgres@127.0.0.1:${pgPort}/payments`,
  });
  await client.connect();
  try {
    await eventually(
      'the slow request to open its transaction',
      async () => {
        const { rows } = await client.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE state = 'idle in transaction'`,
        );
        return rows[0].n > 0 ? true : undefined;
      },
      10_000,
    );
  } finally {
    await client.end();
  }
}

/**
 * Ctrl-C or SIGTERM on `npm start` (no DATABASE_URL): the demo and its PostgreSQL stop in order.
 * Both tests use one cluster (the second start reuses it), which saves an initdb, and each runs
 * on one of the two HTTP adapters, whose servers close differently.
 */
describe('the demo on its embedded PostgreSQL, stopped by a signal', () => {
  mkdirSync(resolve(__dirname, '../.data'), { recursive: true });
  const dir = mkdtempSync(resolve(__dirname, '../.data/graceful-shutdown-'));
  chmodSync(dir, 0o755); // PostgreSQL runs as its own user when the tests run as root
  const dataDir = resolve(dir, 'pgdata');
  let demo: ProcessGroup | undefined;
  let clusterDir: string | undefined;

  afterAll(() => {
    demo?.kill();
    rmSync(dir, { recursive: true, force: true });
    // Elsewhere when the postgres user cannot reach the checkout (running as root).
    if (clusterDir) rmSync(clusterDir, { recursive: true, force: true });
  });

  it.each([
    ['SIGTERM', 'express'],
    ['SIGINT', 'fastify'],
  ] as const)(
    '%s (%s): answers the request in flight, refuses new ones, stops PostgreSQL after the app, and exits 0',
    async (signal, adapter) => {
      const pgPort = await findFreePort();
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        PORT: String(await findFreePort()),
        PROVIDER_PORT: String(await findFreePort()),
        EMBEDDED_PG_DIR: dataDir,
        EMBEDDED_PG_PORT: String(pgPort),
        DEMO_FAULTS: '1',
        AMQP_URL: '',
        HTTP_ADAPTER: adapter,
      };
      delete env.DATABASE_URL;
      delete env.PROVIDER_URL;
      if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run "npm run build" first`);
      demo = new ProcessGroup(process.execPath, [MAIN], Number(env.PORT), { env });
      await demo.waitUntilHealthy();
      clusterDir = /DATABASE_URL is not set: .*, data in (\S+)/.exec(demo.text)?.[1];

      const customerId = uniqueCustomer();
      const slow = postRaw(
        demo.url,
        '/v1/orders',
        JSON.stringify({ customerId, amountCents: 2500 }),
        {
          authorization: ACME.authorization,
          'idempotency-key': uniqueKey(),
          'x-demo-fault': 'delay=1500', // held inside its transaction for 1.5 s
        },
      );
      await transactionOpen(pgPort);
      demo.signal(signal);
      await demo.waitForLog(new RegExp(`${signal}: shutting down`));
      // No longer accepting, while the slow request still runs.
      await expect(fetch(`${demo.url}/health`)).rejects.toThrow();

      const answer = await slow;
      expect(answer.status).toBe(201);
      expect(await demo.exited).toEqual({ code: 0, signal: null });
      const text = demo.text;
      expect(text).toMatch(/PostgreSQL stopped in \d+ ms/);
      expect(text).not.toMatch(/exited unexpectedly/);
      expect(text).not.toMatch(/\bERROR\b/);
      // The app's pools closed first, then PostgreSQL: a clean shutdown removes postmaster.pid.
      expect(text.indexOf('PostgreSQL stopped')).toBeGreaterThan(
        text.indexOf(`${signal}: shutting down`),
      );
      expect(clusterDir && existsSync(resolve(clusterDir, 'postmaster.pid'))).toBe(false);

      // The answered order is committed: start the same cluster again and look.
      const database = await startEmbeddedPostgres({
        dataDir,
        port: pgPort,
        database: 'payments',
        log: () => undefined,
      });
      const client = new Client({ connectionString: database.url });
      try {
        await client.connect();
        const { rows } = await client.query('SELECT id FROM orders WHERE customer_id = $1', [
          customerId,
        ]);
        expect(rows).toEqual([{ id: (JSON.parse(answer.text) as { id: string }).id }]);
      } finally {
        await client.end();
        await database.stop();
      }
    },
  );
});
