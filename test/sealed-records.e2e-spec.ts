import type { INestApplication } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { IdempotencyProblemType } from 'nestjs-pg-idempotency';
import { configFromEnv } from '../apps/payments-api/src/config';
import { TestDatabase } from './support/database';
import { ACME, postRaw, type RawResponse, uniqueCustomer, uniqueKey } from './support/http';
import { createTestApp } from './support/test-app';

const oldKey = randomBytes(32).toString('base64');
const newKey = randomBytes(32).toString('base64');

/** The demo as `IDEMPOTENCY_ENCRYPTION_KEYS` configures it, listening on a port of its own. */
async function startDemo(encryptionKeys: string): Promise<{ app: INestApplication; url: string }> {
  const config = configFromEnv(
    { IDEMPOTENCY_ENCRYPTION_KEYS: encryptionKeys },
    'unused',
    'http://127.0.0.1:9',
  );
  const app = await createTestApp({ encryptionKeys: config.encryptionKeys });
  await app.listen(0, '127.0.0.1');
  return { app, url: await app.getUrl() };
}

interface SealedKeyRow {
  response_code: number;
  response_headers: unknown;
  sealed_with: string | null;
  row_text: string;
}

describe('sealed records on the demo (IDEMPOTENCY_ENCRYPTION_KEYS)', () => {
  const db = new TestDatabase();
  const apps: INestApplication[] = [];
  let sealedWithOld: string; // k-old
  let rotated: string; // k-new, k-old
  let retired: string; // k-new only
  beforeAll(async () => {
    for (const keys of [
      `k-old:${oldKey}`,
      `k-new:${newKey},k-old:${oldKey}`,
      ` k-new : ${newKey} `, // spaces around the parts are allowed
    ]) {
      const { app, url } = await startDemo(keys);
      apps.push(app);
      if (!sealedWithOld) sealedWithOld = url;
      else if (!rotated) rotated = url;
      else retired = url;
    }
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
    await db.close();
  });

  const createOrder = (url: string, key: string, customerId: string): Promise<RawResponse> =>
    postRaw(url, '/v1/orders', JSON.stringify({ customerId, amountCents: 1250 }), {
      authorization: ACME.authorization,
      'idempotency-key': key,
    });

  const keyRow = async (key: string): Promise<SealedKeyRow> => {
    const [row] = await db.query<Record<string, unknown>>(
      `SELECT response_code, response_headers, sealed_with,
              row_to_json(k)::text || coalesce(encode(response_body, 'escape'), '') AS row_text
         FROM idempotency_keys k WHERE tenant_id = $1 AND idem_key = $2`,
      [ACME.tenant, key],
    );
    return row as unknown as SealedKeyRow;
  };

  it('keeps the order out of the key row in plain, and replays it byte for byte', async () => {
    const key = uniqueKey();
    const customerId = uniqueCustomer();
    const created = await createOrder(sealedWithOld, key, customerId);
    expect(created.status).toBe(201);
    const order = JSON.parse(created.text) as { id: string };
    const row = await keyRow(key);
    expect(row).toMatchObject({ response_code: 201, response_headers: null, sealed_with: 'k-old' });
    expect(row.row_text).not.toContain(order.id);
    expect(row.row_text).not.toContain(customerId);
    expect(row.row_text).not.toContain(`/v1/orders/${order.id}`);

    // Another process (no shared memory): the replay opens the row.
    const replay = await createOrder(rotated, key, customerId);
    expect(replay.status).toBe(201);
    expect(replay.text).toBe(created.text);
    expect(replay.headers.get('location')).toBe(created.headers.get('location'));
    expect(await db.orders(ACME.tenant, customerId)).toHaveLength(1);
  });

  it('rotation: with the new key first and the old one kept, old rows replay and new rows carry the new id', async () => {
    const oldRowKey = uniqueKey();
    const oldCustomer = uniqueCustomer();
    const first = await createOrder(sealedWithOld, oldRowKey, oldCustomer);
    expect((await keyRow(oldRowKey)).sealed_with).toBe('k-old');
    const replay = await createOrder(rotated, oldRowKey, oldCustomer);
    expect(replay.text).toBe(first.text);

    const newRowKey = uniqueKey();
    const newCustomer = uniqueCustomer();
    const created = await createOrder(rotated, newRowKey, newCustomer);
    expect(created.status).toBe(201);
    expect((await keyRow(newRowKey)).sealed_with).toBe('k-new');
    expect((await keyRow(newRowKey)).row_text).not.toContain(newCustomer);
    expect(await db.orders(ACME.tenant, oldCustomer)).toHaveLength(1);
    expect(await db.orders(ACME.tenant, newCustomer)).toHaveLength(1);
  });

  it('with the old key removed, its rows fail closed: a 500 problem of the library, no second order', async () => {
    const key = uniqueKey();
    const customerId = uniqueCustomer();
    await createOrder(sealedWithOld, key, customerId);
    const retry = await createOrder(retired, key, customerId);
    expect(retry.status).toBe(500);
    expect(retry.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(JSON.parse(retry.text)).toMatchObject({
      type: IdempotencyProblemType.sealedRecordUnreadable,
      status: 500,
    });
    expect(retry.text).not.toContain(customerId);
    expect(await db.orders(ACME.tenant, customerId)).toHaveLength(1);
    // A row the retired keyring sealed itself still replays there.
    const fresh = uniqueKey();
    const freshCustomer = uniqueCustomer();
    const created = await createOrder(retired, fresh, freshCustomer);
    expect((await createOrder(retired, fresh, freshCustomer)).text).toBe(created.text);
  });

  it('stops the start on a malformed IDEMPOTENCY_ENCRYPTION_KEYS, without echoing key material', () => {
    const read = (value: string) => () =>
      configFromEnv({ IDEMPOTENCY_ENCRYPTION_KEYS: value }, 'unused', 'http://127.0.0.1:9');
    expect(read(oldKey)).toThrow(/entry 1 must be <id>:<base64 of 32 bytes>/);
    expect(read(`a:${oldKey},:${newKey}`)).toThrow(/entry 2 must be <id>:<base64/);
    expect(read(`a:${oldKey},a:${newKey}`)).toThrow(/the id "a" is listed twice/);
    const short = randomBytes(16).toString('base64');
    expect(read(`a:${short}`)).toThrow(/the key of "a" must be 32 bytes in base64/);
    expect(read(`a:${short}`)).not.toThrow(short);
    expect(read(`a:${oldKey.replace(/.$/, '!')}`)).toThrow(/must be 32 bytes in base64/);
    expect(read('').call(undefined).encryptionKeys).toBeUndefined();
  });
});

/** Sealing happens in JS before the record statement: the round trips stay those of a plain create. */
describe('sealed records cost no round trip', () => {
  const sent: string[] = [];
  const original = Client.prototype.query;
  const apps: INestApplication[] = [];
  afterAll(async () => {
    Client.prototype.query = original;
    for (const app of apps) await app.close();
  });

  /** The first word of each query one create sends, on a connection that prepared already. */
  async function createQueries(url: string): Promise<string[]> {
    const create = () =>
      postRaw(url, '/v1/orders', JSON.stringify({ customerId: uniqueCustomer(), amountCents: 9 }), {
        authorization: ACME.authorization,
        'idempotency-key': uniqueKey(),
      });
    await create(); // prepares the claim and the record on this connection
    sent.length = 0;
    expect((await create()).status).toBe(201);
    return sent.map((sql) => sql.trim().split(/\s+/)[0].toUpperCase());
  }

  it('sends the same queries for a create with and without encryption', async () => {
    const plain = await createTestApp();
    const sealed = (await startDemo(`k1:${oldKey}`)).app;
    apps.push(plain, sealed);
    await plain.listen(0, '127.0.0.1');
    Client.prototype.query = function (this: Client, ...args: unknown[]) {
      const first = args[0];
      sent.push(typeof first === 'string' ? first : String((first as { text?: string })?.text));
      return (original as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof Client.prototype.query;
    const withoutEncryption = await createQueries(await plain.getUrl());
    const withEncryption = await createQueries(await sealed.getUrl());
    expect(withEncryption).toEqual(['START', 'INSERT', 'EXECUTE']);
    expect(withEncryption).toEqual(withoutEncryption);
  });
});
