import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import type { INestApplication } from '@nestjs/common';
import { IdempotencyCleanup } from 'nestjs-pg-idempotency';
import { withAppTypeParsers } from '../libs/idempotency/test/support/app-type-parsers';
import { TestDatabase } from './support/database';
import { ACME, postRaw, uniqueCustomer, uniqueKey } from './support/http';
import { createTestApp, databaseUrl } from './support/test-app';

/** Inserts `count` key rows for `tenant`, expiring and leased as told (seconds from now). */
async function fill(
  db: TestDatabase,
  tenant: string,
  count: number,
  row: { status: string; expiresIn: number; leaseFor?: number },
) {
  await db.query(
    `INSERT INTO idempotency_keys (tenant_id, endpoint, idem_key, request_hash, status, response_code, response_body,
                                   expires_at, locked_until, lease_owner)
     SELECT $1, 'POST /fill', $2 || g, repeat('0', 64), $3,
            CASE WHEN $3 = 'completed' THEN 201 END, CASE WHEN $3 = 'completed' THEN '\\x7b7d'::bytea END,
            now() + make_interval(secs => $4), now() + make_interval(secs => $5), CASE WHEN $5 IS NOT NULL THEN gen_random_uuid() END
       FROM generate_series(1, $6) AS g`,
    [
      tenant,
      `${row.status}-${row.expiresIn}-${row.leaseFor ?? 'none'}-`,
      row.status,
      row.expiresIn,
      row.leaseFor ?? null,
      count,
    ],
  );
}

const countRows = async (db: TestDatabase, tenant: string, where = 'true') =>
  (
    await db.query<{ n: number }>(
      `SELECT count(*)::integer AS n FROM idempotency_keys WHERE tenant_id = $1 AND ${where}`,
      [tenant],
    )
  )[0].n;

describe('expiry cleanup', () => {
  let app: INestApplication;
  let url: string;
  let db: TestDatabase;

  beforeAll(async () => {
    app = await createTestApp();
    await app.listen(0, '127.0.0.1');
    url = await app.getUrl();
    db = new TestDatabase();
  });
  afterAll(async () => {
    await app.close();
    await db.close();
  });

  it('removes exactly the expired rows in batches while requests go on, none of which fails', async () => {
    const tenant = `cleanup-${randomUUID()}`;
    await fill(db, tenant, 4000, { status: 'completed', expiresIn: -60 });
    await fill(db, tenant, 2000, { status: 'completed', expiresIn: 3600 });
    await fill(db, tenant, 300, { status: 'in_progress', expiresIn: -60, leaseFor: 600 }); // expired but leased: kept
    await fill(db, tenant, 200, { status: 'in_progress', expiresIn: -60, leaseFor: -10 }); // abandoned: removed

    let stop = false;
    const statuses: number[] = [];
    const traffic = (async () => {
      while (!stop) {
        const res = await postRaw(
          url,
          '/v1/orders',
          JSON.stringify({ customerId: uniqueCustomer(), amountCents: 100 }),
          {
            authorization: ACME.authorization,
            'idempotency-key': uniqueKey(),
          },
        );
        statuses.push(res.status);
      }
    })();
    const report = await app.get(IdempotencyCleanup).purgeExpired({ batchSize: 500 });
    stop = true;
    await traffic;

    expect(report.removed).toBeGreaterThanOrEqual(4200);
    expect(report.batches).toBeGreaterThanOrEqual(9);
    expect(await countRows(db, tenant)).toBe(2300);
    expect(await countRows(db, tenant, `expires_at > now()`)).toBe(2000);
    expect(await countRows(db, tenant, `status = 'in_progress' AND locked_until > now()`)).toBe(
      300,
    );
    expect(statuses.length).toBeGreaterThan(0);
    expect(statuses.every((s) => s === 201)).toBe(true);
  });

  it('runs as a command: npm run idempotency:cleanup prints what it removed', async () => {
    const tenant = `cleanup-cmd-${randomUUID()}`;
    await fill(db, tenant, 50, { status: 'completed', expiresIn: -1 });
    await fill(db, tenant, 5, { status: 'completed', expiresIn: 3600 });
    const script = resolve(__dirname, '../dist/apps/payments-api/apps/payments-api/src/cleanup.js');
    const output = await new Promise<string>((done, fail) => {
      const child = spawn(process.execPath, [script], {
        env: { ...process.env, DATABASE_URL: databaseUrl() },
      });
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
      child.on('exit', (code) =>
        code === 0 ? done(out) : fail(new Error(`exit ${code}: ${out}`)),
      );
    });
    const report = JSON.parse(output.trim().split('\n').pop() ?? '{}');
    expect(report.idempotency_keys.removed).toBeGreaterThanOrEqual(50);
    expect(await countRows(db, tenant)).toBe(5);
  });

  it("counts what it removed whatever the app's own type parsers make of integers", async () => {
    // The count comes back as text the library turns into a number: a string here would be
    // added to, not summed, across batches.
    const tenant = `cleanup-parsers-${randomUUID()}`;
    await fill(db, tenant, 12, { status: 'completed', expiresIn: -1 });
    const report = await withAppTypeParsers(() =>
      app.get(IdempotencyCleanup).purgeExpired({ batchSize: 5 }),
    );
    expect(typeof report.removed).toBe('number');
    expect(report.removed).toBeGreaterThanOrEqual(12);
    expect(report.batches).toBeGreaterThanOrEqual(3);
    expect(await countRows(db, tenant)).toBe(0);
  });
});
