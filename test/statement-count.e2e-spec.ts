import type { INestApplication } from '@nestjs/common';
import { Client } from 'pg';
import request from 'supertest';
import { ACME, uniqueCustomer, uniqueKey } from './support/http';
import { createTestApp } from './support/test-app';

/**
 * Counts the statements the app sends to PostgreSQL for one request, by wrapping the driver's
 * `Client#query` (every TypeORM query goes through it). Not a timing: a count, exact each run.
 */
describe('statements per request', () => {
  let app: INestApplication;
  const sent: string[] = [];
  const original = Client.prototype.query;

  beforeAll(async () => {
    app = await createTestApp();
    Client.prototype.query = function (this: Client, ...args: unknown[]) {
      const first = args[0];
      sent.push(typeof first === 'string' ? first : String((first as { text?: string })?.text));
      return (original as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof Client.prototype.query;
  });
  const servers: INestApplication[] = [];
  afterAll(async () => {
    Client.prototype.query = original;
    await app.close();
    await Promise.all(servers.map((server) => server.close()));
  });

  /** The statements of one simple-protocol batch (the library joins them with ";\n"). */
  function statementsOf(batch: string): string[] {
    return batch.split(';\n').map((statement) => statement.trim());
  }

  /** The first word of each query the request sent, and the queries themselves. */
  async function countStatements(
    send: () => Promise<unknown>,
  ): Promise<string[] & { raw: string[] }> {
    sent.length = 0;
    await send();
    const words = sent.map((sql) => sql.trim().split(/\s+/)[0].toUpperCase());
    return Object.assign(words, { raw: sent.map((sql) => sql.trim()) });
  }

  it('sends 3 round trips (7 statements) for an idempotent create, 2 for a replay (1 waited for), none for a cached replay', async () => {
    const body = { customerId: uniqueCustomer(), amountCents: 100 };
    const post = (key: string) => () =>
      request(app.getHttpServer())
        .post('/v1/orders')
        .set({ authorization: ACME.authorization, 'idempotency-key': key })
        .send(body)
        .expect((res) => expect([201]).toContain(res.status));
    // Warm the pool so connection set-up is not counted.
    await request(app.getHttpServer()).get('/health').expect(200);

    // The first create on a connection prepares the claim and the record there, in the same
    // round trips; the pool hands requests made one after another the same connection.
    const first = await countStatements(post(uniqueKey()));
    const key = uniqueKey();
    const create = await countStatements(post(key));
    // This process recorded the outcome: it replays from memory.
    const cachedReplay = await countStatements(post(key));
    // Another process (here a second app) has no copy: it reads the row.
    const other = await createTestApp();
    servers.push(other);
    let answeredAfter: string[] = [];
    const replay = await countStatements(async () => {
      await request(other.getHttpServer())
        .post('/v1/orders')
        .set({ authorization: ACME.authorization, 'idempotency-key': key })
        .send(body)
        .expect((res) => expect(res.status).toBe(201));
      answeredAfter = [...sent];
      // The ROLLBACK that ends the replay's transaction is sent, not waited for.
      await new Promise((resolve) => setTimeout(resolve, 200));
    });
    expect([...cachedReplay]).toEqual([]);

    // The same round trips as the handler without idempotency: START TRANSACTION carrying the
    // claim (with its lock timeout), the restore of the lock timeout it replaced and the SAVEPOINT; the
    // handler's INSERT; the record carrying COMMIT.
    expect([...first]).toEqual(['START', 'INSERT', 'PREPARE']);
    expect([...create]).toEqual(['START', 'INSERT', 'EXECUTE']);
    expect(statementsOf(first.raw[0])).toEqual([
      'START TRANSACTION',
      expect.stringMatching(
        /^PREPARE idempotency_claim_[0-9a-f]{8} AS WITH claim AS \(\s+INSERT INTO idempotency_keys/,
      ),
      expect.stringMatching(
        /^EXECUTE idempotency_claim_[0-9a-f]{8}\('acme', 'POST \/v1\/orders', '/,
      ),
      "SELECT set_config('lock_timeout', current_setting('idempotency.lock_timeout_before') || left(set_config('idempotency.lock_timeout_before', '', true), 0), true)",
      'SAVEPOINT idempotency_handler',
    ]);
    expect(statementsOf(first.raw[2])).toEqual([
      expect.stringMatching(
        /^PREPARE idempotency_record_[0-9a-f]{8} AS WITH recorded AS \(\s+UPDATE idempotency_keys/,
      ),
      expect.stringMatching(
        /^EXECUTE idempotency_record_[0-9a-f]{8}\('acme', 'POST \/v1\/orders', '/,
      ),
      'COMMIT',
    ]);
    expect(statementsOf(create.raw[0])).toEqual([
      'START TRANSACTION',
      expect.stringMatching(
        /^EXECUTE idempotency_claim_[0-9a-f]{8}\('acme', 'POST \/v1\/orders', '/,
      ),
      "SELECT set_config('lock_timeout', current_setting('idempotency.lock_timeout_before') || left(set_config('idempotency.lock_timeout_before', '', true), 0), true)",
      'SAVEPOINT idempotency_handler',
    ]);
    expect(create.raw[1]).toMatch(/^INSERT INTO "orders"/);
    expect(statementsOf(create.raw[2])).toEqual([
      expect.stringMatching(/^EXECUTE idempotency_record_[0-9a-f]{8}\(/),
      'COMMIT',
    ]);
    // The key travels as a quoted literal in those batches, never as SQL.
    expect(create.raw[0]).toContain(`'${key}'`);
    // START TRANSACTION carrying the claim-or-read, which wrote nothing: the answer went out
    // after it, and a ROLLBACK followed.
    expect([...replay]).toEqual(['START', 'ROLLBACK']);
    expect(answeredAfter.length).toBeGreaterThanOrEqual(1);
    console.log(
      `round trips: create ${create.length} (${create.join(', ')}), replay ${replay.length} (${replay.join(', ')}), cached replay 0`,
    );
  });
});
