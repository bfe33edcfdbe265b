import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { randomUUID } from 'node:crypto';
import type {
  CallHandler,
  ExecutionContext,
  INestApplication,
  NestInterceptor,
} from '@nestjs/common';
import { IdempotencyModule } from 'nestjs-pg-idempotency';
import { from, lastValueFrom } from 'rxjs';
import request from 'supertest';
import type { DataSource } from 'typeorm';
import { TestDatabase } from '../support/test-database';
import { createLibraryApp } from './library-app';

const LOCK_TIMEOUT_MS = 500;

/**
 * The claim's bound on lock waits, on one pooled connection (so a session setting made on it
 * is the one the next request's transaction runs on): every wait of a claim is bounded, the
 * handler gets the transaction's own `lock_timeout` back afterwards, and a claim that fails on
 * its bound leaves no prepared statement behind.
 */
describe('lock waits of a claim', () => {
  let app: INestApplication;
  let dataSource: DataSource;
  const db = new TestDatabase();

  beforeAll(async () => {
    ({ app, dataSource } = await createLibraryApp(
      IdempotencyModule.forRoot({
        lockTimeoutMs: LOCK_TIMEOUT_MS,
        replayCache: false,
        cleanup: false,
      }),
      undefined,
      { poolSize: 1 },
    ));
  });

  afterAll(async () => {
    await app.close();
    await db.close();
  });

  const post = (path: string, key: string, tag: string) =>
    request(app.getHttpServer()).post(path).set('idempotency-key', key).send({ tag });

  /** A completed row of `scope` past its time to live: the next claim deletes it and claims anew. */
  const insertExpired = (scope: string, key: string) =>
    db.query(
      `INSERT INTO idempotency_keys (tenant_id, endpoint, idem_key, request_hash, status,
         response_code, response_headers, response_body, expires_at)
       VALUES ('', $1, $2, 'another request', 'completed', 201, '{}', '\\x7b7d',
               now() - interval '1 hour')`,
      [scope, key],
    );

  const effects = (tag: string) =>
    db.query(`SELECT route FROM library_test_effects WHERE tag = $1`, [tag]);

  it('waits at most lockTimeoutMs on an expired row that another transaction holds, then 409', async () => {
    const key = randomUUID();
    const tag = `held-${key}`;
    await insertExpired('POST /widgets', key);
    // As a twin deleting the same expired row to claim it anew would, or the cleanup.
    const holder = await db.holdUncommitted(
      `SELECT 1 FROM idempotency_keys
        WHERE tenant_id = '' AND endpoint = 'POST /widgets' AND idem_key = $1 FOR UPDATE`,
      [key],
    );
    const started = performance.now();
    let res: request.Response;
    try {
      res = await post('/widgets', key, tag);
    } finally {
      await holder.rollback();
    }
    const elapsed = performance.now() - started;
    expect(res.status).toBe(409);
    expect(res.headers['retry-after']).toBeDefined();
    expect(elapsed).toBeGreaterThanOrEqual(LOCK_TIMEOUT_MS - 50);
    expect(elapsed).toBeLessThan(LOCK_TIMEOUT_MS + 1000);
    expect(await effects(tag)).toEqual([]);
    // Released: the key is claimed anew and the handler runs once.
    const retried = await post('/widgets', key, tag);
    expect(retried.status).toBe(201);
    expect(await effects(tag)).toEqual([{ route: 'widgets' }]);
  });

  it("gives the handler the session's own lock_timeout, not the server default", async () => {
    // Pool of 1: the connection the next request's transaction runs on.
    await dataSource.query(`SET lock_timeout = '5s'`);
    try {
      const res = await post('/lock-timeout', randomUUID(), `session-${randomUUID()}`);
      expect(res.status).toBe(201);
      expect(res.body).toEqual({ lockTimeout: '5s' });
      // After a claim that deleted an expired row and claimed again (two bounds, one restore).
      const key = randomUUID();
      await insertExpired('POST /lock-timeout', key);
      const again = await post('/lock-timeout', key, `expired-${key}`);
      expect(again.status).toBe(201);
      expect(again.body).toEqual({ lockTimeout: '5s' });
      // And the session keeps its value once the transactions are over.
      expect(await dataSource.query('SHOW lock_timeout')).toEqual([{ lock_timeout: '5s' }]);
    } finally {
      await dataSource.query('RESET lock_timeout');
    }
  });

  it('leaves no prepared statement behind when claims time out on a fresh session', async () => {
    const key = randomUUID();
    const holder = await db.holdRunningClaim('POST /widgets', key);
    try {
      // The session loses its statements: each claim below would prepare them again.
      await dataSource.query('DISCARD ALL');
      for (let attempt = 0; attempt < 4; attempt++) {
        expect((await post('/widgets', key, `contended-${key}`)).status).toBe(409);
      }
    } finally {
      await holder.rollback();
    }
    const prepared: { name: string }[] = await dataSource.query(
      `SELECT name FROM pg_prepared_statements WHERE name LIKE 'idempotency_claim_%'`,
    );
    expect(prepared).toHaveLength(1);
    // And the one that is left still serves: a fresh key is claimed through it.
    expect((await post('/widgets', randomUUID(), `after-${key}`)).status).toBe(201);
  });
});

/**
 * An app's own transaction around each request, opened before the idempotency interceptor,
 * which notes the `lock_timeout` that transaction has once the request is through.
 */
class TransactionNotingLockTimeout implements NestInterceptor {
  readonly seen = new Map<string, string>();

  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  intercept(context: ExecutionContext, next: CallHandler) {
    const key = String(context.switchToHttp().getRequest().headers['idempotency-key']);
    return from(
      this.txHost.withTransaction(async () => {
        try {
          return await lastValueFrom(next.handle(), { defaultValue: undefined });
        } finally {
          const [row] = await this.txHost.tx.query('SHOW lock_timeout');
          this.seen.set(key, row.lock_timeout);
        }
      }),
    );
  }
}

describe("lock waits of a claim inside the app's own transaction", () => {
  let app: INestApplication;
  let noting: TransactionNotingLockTimeout;

  beforeAll(async () => {
    ({ app } = await createLibraryApp(
      IdempotencyModule.forRoot({
        lockTimeoutMs: LOCK_TIMEOUT_MS,
        replayCache: false,
        cleanup: false,
      }),
      (nest) => {
        noting = new TransactionNotingLockTimeout(nest.get(TransactionHost));
        nest.useGlobalInterceptors(noting);
      },
    ));
  });

  afterAll(() => app.close());

  const post = (key: string, tag: string) =>
    request(app.getHttpServer()).post('/widgets').set('idempotency-key', key).send({ tag });

  it("gives the app's transaction its lock_timeout back after a create, a replay and a 422", async () => {
    const [{ lock_timeout: before }] = await app
      .get(TransactionHost<TransactionalAdapterTypeOrm>)
      .tx.query('SHOW lock_timeout');
    const key = randomUUID();
    const tag = `joined-${key}`;
    expect((await post(key, tag)).status).toBe(201);
    expect(noting.seen.get(key)).toBe(before);
    noting.seen.delete(key);
    expect((await post(key, tag)).status).toBe(201);
    expect(noting.seen.get(key)).toBe(before);
    noting.seen.delete(key);
    expect((await post(key, `other-${tag}`)).status).toBe(422);
    expect(noting.seen.get(key)).toBe(before);
  });
});
