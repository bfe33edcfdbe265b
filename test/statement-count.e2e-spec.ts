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

  /** The first word of each query the request sent, and the queries themselves. */
  async function countStatements(send: () => Promise<unknown>): Promise<string[] & { raw: string[] }> {
    sent.length = 0;
    await send();
    const words = sent.map((sql) => sql.trim().split(/\s+/)[0].toUpperCase());
    return Object.assign(words, { raw: sent.map((sql) => sql.trim()) });
  }

  it('sends 7 statements in 6 round trips for an idempotent create, 3 for a replay, none for a cached replay', async () => {
    const key = uniqueKey();
    const body = { customerId: uniqueCustomer(), amountCents: 100 };
    const post = () =>
      request(app.getHttpServer())
        .post('/v1/orders')
        .set({ authorization: ACME.authorization, 'idempotency-key': key })
        .send(body)
        .expect((res) => expect([201]).toContain(res.status));
    // Warm the pool so connection set-up is not counted.
    await request(app.getHttpServer()).get('/health').expect(200);

    const create = await countStatements(post);
    // This process recorded the outcome: it replays from memory.
    const cachedReplay = await countStatements(post);
    // Another process (here a second app) has no copy: it reads the row.
    const other = await createTestApp();
    servers.push(other);
    const replay = await countStatements(() =>
      request(other.getHttpServer())
        .post('/v1/orders')
        .set({ authorization: ACME.authorization, 'idempotency-key': key })
        .send(body)
        .expect((res) => expect(res.status).toBe(201)),
    );
    expect([...cachedReplay]).toEqual([]);

    // START TRANSACTION, claim (with its lock timeout), SET LOCAL lock_timeout TO DEFAULT +
    // SAVEPOINT (one round trip), INSERT order, UPDATE key, COMMIT
    expect([...create]).toEqual(['START', 'WITH', 'SET', 'INSERT', 'WITH', 'COMMIT']);
    expect(create.raw[2]).toBe('SET LOCAL lock_timeout TO DEFAULT; SAVEPOINT idempotency_handler');
    // START TRANSACTION, claim-or-read, COMMIT
    expect([...replay]).toEqual(['START', 'WITH', 'COMMIT']);
    // eslint-disable-next-line no-console
    console.log(
      `round trips: create ${create.length} (${create.join(', ')}), replay ${replay.length} (${replay.join(', ')}), cached replay 0`,
    );
  });
});
