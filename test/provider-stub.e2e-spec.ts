import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { findFreePort } from '#tools/embedded-postgres';
import { AppProcess } from './support/app-process';
import { TestDatabase } from './support/database';
import { uniqueKey } from './support/http';
import { newOrder, pay } from './support/payments';
import { providerCharges } from './support/provider';
import { databaseUrl } from './support/test-app';

/** The charges the stub recorded for `reference`, read from the given database. */
async function chargesIn(database: Client, reference: string): Promise<number> {
  const { rows } = await database.query<{ n: string }>(
    'SELECT count(*) AS n FROM provider_stub.charges WHERE reference = $1',
    [reference],
  );
  return Number(rows[0].n);
}

/** A payment of `amountCents` on a fresh order through the demo at `url`; its id. */
async function paidPayment(url: string, amountCents = 1500): Promise<string> {
  const orderId = await newOrder(url);
  const res = await pay(url, uniqueKey(), orderId, amountCents);
  expect(res.status).toBe(201);
  return (JSON.parse(res.text) as { id: string }).id;
}

describe('demo processes started with one PROVIDER_PORT', () => {
  let db: TestDatabase;
  let first: Client;
  let otherName: string;
  let other: Client;
  let providerUrl: string;
  let owner: AppProcess; // started first: its stub holds PROVIDER_PORT
  let sameDatabase: AppProcess;
  let otherDatabase: AppProcess;

  beforeAll(async () => {
    db = new TestDatabase();
    first = new Client({ connectionString: databaseUrl() });
    await first.connect();
    otherName = `provider_stub_other_${randomUUID().slice(0, 8)}`;
    await db.query(`CREATE DATABASE ${otherName}`);
    const otherUrl = new URL(databaseUrl());
    otherUrl.pathname = `/${otherName}`;
    other = new Client({ connectionString: otherUrl.toString() });
    await other.connect();
    const PROVIDER_PORT = String(await findFreePort());
    providerUrl = `http://127.0.0.1:${PROVIDER_PORT}`;
    owner = await AppProcess.start({ DATABASE_URL: databaseUrl(), PROVIDER_PORT });
    sameDatabase = await AppProcess.start({ DATABASE_URL: databaseUrl(), PROVIDER_PORT });
    otherDatabase = await AppProcess.start({ DATABASE_URL: otherUrl.toString(), PROVIDER_PORT });
  });
  afterAll(async () => {
    await Promise.all([owner, sameDatabase, otherDatabase].map((app) => app?.stop()));
    await first?.end();
    await other?.end();
    await db.query(`DROP DATABASE IF EXISTS ${otherName} WITH (FORCE)`);
    await db.close();
  });

  it("records a process's charges in its own database, never in the port owner's", async () => {
    const paymentId = await paidPayment(otherDatabase.url);
    expect(await chargesIn(other, paymentId)).toBe(1);
    expect(await chargesIn(first, paymentId)).toBe(0);
  });

  it('acts as one card processor on one database: GET /charges on PROVIDER_PORT lists the charge', async () => {
    const paymentId = await paidPayment(sameDatabase.url);
    expect(await providerCharges(providerUrl, paymentId)).toHaveLength(1);
  });

  it('keeps taking payments on the second process once the port owner is killed', async () => {
    await owner.stop('SIGKILL');
    const paymentId = await paidPayment(sameDatabase.url, 1600);
    expect(await chargesIn(first, paymentId)).toBe(1);
  });
});

describe('the provider stub under a DATABASE_URL with options', () => {
  let app: AppProcess;
  let db: TestDatabase;

  beforeAll(async () => {
    db = new TestDatabase();
    const url = new URL(databaseUrl());
    url.searchParams.set('options', '-c statement_timeout=60000');
    app = await AppProcess.start({ DATABASE_URL: url.toString() });
  });
  afterAll(async () => {
    await app.stop();
    await db.close();
  });

  it('keeps its charges and its keys in the provider_stub schema', async () => {
    const stubKeysInPublic = async () =>
      (
        await db.query<{ n: string }>(
          `SELECT count(*) AS n FROM public.idempotency_keys WHERE endpoint = 'POST /charges'`,
        )
      )[0].n;
    const before = await stubKeysInPublic();
    const paymentId = await paidPayment(app.url);
    expect(await providerCharges(app.providerUrl, paymentId)).toHaveLength(1);
    const [inStubSchema] = await db.query<{ n: string }>(
      'SELECT count(*) AS n FROM provider_stub.charges WHERE reference = $1',
      [paymentId],
    );
    expect(Number(inStubSchema.n)).toBe(1);
    expect(await stubKeysInPublic()).toBe(before);
  });
});
