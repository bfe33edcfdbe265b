import type { INestApplication } from '@nestjs/common';
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { IdempotencyProblemType } from 'nestjs-pg-idempotency';
import { Client } from 'pg';
import {
  type EmbeddedPostgresHandle,
  findFreePort,
  startEmbeddedPostgres,
} from '#tools/embedded-postgres';
import { ACME, postRaw, type RawResponse, uniqueCustomer, uniqueKey } from './support/http';
import { createTestApp } from './support/test-app';

/**
 * A PostgreSQL of this test's own, stopped and started again under the demo: the run's shared
 * one serves the other suites meanwhile.
 */
describe('the database is down', () => {
  mkdirSync(resolve(__dirname, '../.data'), { recursive: true });
  const dataDir = mkdtempSync(resolve(__dirname, '../.data/outage-'));
  chmodSync(dataDir, 0o755); // PostgreSQL runs as its own user when the tests run as root
  let port: number;
  let database: EmbeddedPostgresHandle;
  let app: INestApplication;
  let url: string;

  const start = () =>
    startEmbeddedPostgres({
      dataDir: resolve(dataDir, 'pgdata'),
      port,
      database: 'outage',
      log: () => undefined,
      // The run's shared server gets 300 (test/setup/global-setup.ts); this one checks the option.
      maxConnections: 40,
    });

  async function query<T>(sql: string, params: unknown[] = []): Promise<T[]> {
    const client = new Client({ connectionString: database.url });
    await client.connect();
    try {
      return (await client.query(sql, params)).rows as T[];
    } finally {
      await client.end();
    }
  }

  beforeAll(async () => {
    port = await findFreePort();
    database = await start();
    app = await createTestApp({ databaseUrl: database.url });
    await app.listen(0, '127.0.0.1');
    url = await app.getUrl();
  }, 120_000);
  afterAll(async () => {
    await app?.close();
    await database?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const create = (key: string, customerId: string) =>
    postRaw(url, '/v1/orders', JSON.stringify({ customerId, amountCents: 700 }), {
      authorization: ACME.authorization,
      'idempotency-key': key,
    });

  function expectUnavailable(response: RawResponse): void {
    expect(response.status).toBe(503);
    expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(response.headers.get('retry-after')).toBe('1');
    expect(JSON.parse(response.text)).toMatchObject({
      type: IdempotencyProblemType.databaseUnavailable,
      status: 503,
    });
  }

  it('runs the embedded server with the max_connections it was given', async () => {
    expect(await query<{ max_connections: string }>('SHOW max_connections')).toEqual([
      { max_connections: '40' },
    ]);
  });

  it('answers 503 with Retry-After while it is down, claims nothing, and creates the order once on retry', async () => {
    const warmUp = await create(uniqueKey(), uniqueCustomer());
    expect(warmUp.status).toBe(201);

    await database.stop();
    const key = uniqueKey();
    const customerId = uniqueCustomer();
    expectUnavailable(await create(key, customerId));
    expectUnavailable(await create(key, customerId));
    // Routes without @Idempotent() answer the same through the demo's filter; /health as ever.
    const read = await fetch(`${url}/v1/orders/00000000-0000-4000-8000-000000000000`, {
      headers: { authorization: ACME.authorization },
    });
    expectUnavailable({ status: read.status, headers: read.headers, text: await read.text() });
    expect((await fetch(`${url}/health`)).status).toBe(503);

    database = await start();
    expect(await query('SELECT 1 FROM idempotency_keys WHERE idem_key = $1', [key])).toEqual([]);
    let retry = await create(key, customerId);
    // The pool's connections died with the server: the first statements on them may still fail.
    for (let attempt = 0; retry.status === 503 && attempt < 10; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      retry = await create(key, customerId);
    }
    expect(retry.status).toBe(201);
    const replay = await create(key, customerId);
    expect(replay.text).toBe(retry.text);
    expect(
      await query('SELECT id FROM orders WHERE tenant_id = $1 AND customer_id = $2', [
        ACME.tenant,
        customerId,
      ]),
    ).toHaveLength(1);
    expect(await query('SELECT status FROM idempotency_keys WHERE idem_key = $1', [key])).toEqual([
      { status: 'completed' },
    ]);
  });
});
