import { Body, Controller, type INestApplication, Post } from '@nestjs/common';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { randomUUID } from 'node:crypto';
import { IdempotencyModule, Idempotent } from 'nestjs-pg-idempotency';
import request from 'supertest';
import type { DataSource } from 'typeorm';
import { TestDatabase } from '../support/test-database';
import { createLibraryApp } from './library-app';

/** The backend of each running request, by tag, and the gate its handler waits at. */
const running = new Map<string, { pid: number; resume: () => void }>();

/**
 * Handlers that note their connection's backend, wait until the test cut it, then write the
 * ways an app does: through the entity manager's `query`, and in a nested transaction.
 */
@Controller('cut')
class CutConnectionController {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  private async waitForCut(tag: string): Promise<void> {
    const [{ pid }] = await this.txHost.tx.query('SELECT pg_backend_pid() AS pid');
    await new Promise<void>((resume) => running.set(tag, { pid, resume }));
  }

  private insert(route: string, tag: string): Promise<unknown> {
    return this.txHost.tx.query(
      'INSERT INTO library_test_effects (route, tag) VALUES ($1, $2) RETURNING id',
      [route, tag],
    );
  }

  @Post('query')
  @Idempotent()
  async viaQuery(@Body() body: { tag: string }) {
    await this.waitForCut(body.tag);
    await this.insert('cut-query', body.tag);
    return { done: true };
  }

  @Post('nested')
  @Idempotent()
  async nested(@Body() body: { tag: string }) {
    await this.waitForCut(body.tag);
    await this.txHost.withTransaction(() => this.insert('cut-nested', body.tag));
    return { done: true };
  }
}

const until = async <T>(read: () => T | undefined): Promise<T> => {
  for (let waited = 0; waited < 5000; waited += 20) {
    const value = read();
    if (value !== undefined) return value;
    await new Promise((done) => setTimeout(done, 20));
  }
  throw new Error('timed out');
};

/**
 * Faults between the database and a running request that the app's own set-up brings: its
 * connection cut while the handler runs, and a `statement_timeout` shorter than the claim's
 * bound on waiting for a twin. Each ends in the answer the README's failure table gives, with
 * nothing written and nothing left behind on the connection.
 */
describe('a connection cut while the handler runs', () => {
  let app: INestApplication;
  let dataSource: DataSource;
  const db = new TestDatabase();

  beforeAll(async () => {
    ({ app, dataSource } = await createLibraryApp(
      IdempotencyModule.forRoot({ replayCache: false, cleanup: false }),
      undefined,
      {},
      { controllers: [CutConnectionController] },
    ));
  });

  afterAll(async () => {
    await app.close();
    await db.close();
  });

  const effects = async (tag: string) =>
    (await dataSource.query('SELECT route FROM library_test_effects WHERE tag = $1', [tag])).map(
      (row: { route: string }) => row.route,
    );

  it.each([
    ['query', 'cut-query'],
    ['nested', 'cut-nested'],
  ])(
    'answers 503 when the handler writes through %s, and the retry writes once',
    async (path, route) => {
      const tag = `cut-${randomUUID()}`;
      const key = randomUUID();
      const send = () =>
        request(app.getHttpServer()).post(`/cut/${path}`).set('idempotency-key', key).send({ tag });
      const first = send().then((res) => res);
      const { pid, resume } = await until(() => running.get(tag));
      running.delete(tag);
      await db.query('SELECT pg_terminate_backend($1)', [pid]);
      // node-postgres hears of the lost connection before the handler writes again.
      await new Promise((done) => setTimeout(done, 200));
      resume();
      const answer = await first;
      expect({ status: answer.status, type: answer.body.type }).toEqual({
        status: 503,
        type: 'urn:idempotency:database-unavailable',
      });
      expect(answer.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(await effects(tag)).toEqual([]);
      expect(await db.query('SELECT 1 FROM idempotency_keys WHERE idem_key = $1', [key])).toEqual(
        [],
      );

      const retry = send().then((res) => res);
      (await until(() => running.get(tag))).resume();
      expect((await retry).status).toBe(201);
      expect(await effects(tag)).toEqual([route]);
    },
  );
});

describe('an app statement_timeout shorter than lockTimeoutMs', () => {
  let app: INestApplication;
  let dataSource: DataSource;
  const db = new TestDatabase();

  beforeAll(async () => {
    ({ app, dataSource } = await createLibraryApp(
      IdempotencyModule.forRoot({ lockTimeoutMs: 2000, replayCache: false, cleanup: false }),
      undefined,
      { poolSize: 1, statementTimeoutMs: 300 },
    ));
  });

  afterAll(async () => {
    await app.close();
    await db.close();
  });

  it('answers a duplicate whose claim it cancelled 409 with Retry-After, and keeps one prepared claim', async () => {
    const key = randomUUID();
    const holder = await db.holdRunningClaim('POST /widgets', key);
    try {
      await dataSource.query('DISCARD ALL');
      for (let attempt = 0; attempt < 4; attempt++) {
        const res = await request(app.getHttpServer())
          .post('/widgets')
          .set('idempotency-key', key)
          .send({ tag: `timed-out-${key}` });
        expect({ status: res.status, type: res.body.type }).toEqual({
          status: 409,
          type: 'urn:idempotency:key-in-use',
        });
        expect(res.headers['retry-after']).toEqual(expect.any(String));
      }
    } finally {
      await holder.rollback();
    }
    const prepared: unknown[] = await dataSource.query(
      `SELECT name FROM pg_prepared_statements WHERE name LIKE 'idempotency_claim_%'`,
    );
    expect(prepared).toHaveLength(1);
    const fresh = await request(app.getHttpServer())
      .post('/widgets')
      .set('idempotency-key', randomUUID())
      .send({ tag: `after-${key}` });
    expect(fresh.status).toBe(201);
    // The refused duplicates ran nothing; the fresh key ran once.
    const written = await db.query<{ tag: string }>(
      'SELECT tag FROM library_test_effects WHERE tag = ANY($1)',
      [[`timed-out-${key}`, `after-${key}`]],
    );
    expect(written.map((row) => row.tag)).toEqual([`after-${key}`]);
  });
});
