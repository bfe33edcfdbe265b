import { randomUUID } from 'node:crypto';
import type { INestApplication } from '@nestjs/common';
import { IdempotencyModule } from 'nestjs-pg-idempotency';
import { Client } from 'pg';
import request from 'supertest';
import type { DataSource } from 'typeorm';
import { withAppTypeParsers } from '../support/app-type-parsers';
import { createLibraryApp } from './library-app';

const ROLLBACK_DELAY_MS = 1000;

/**
 * A replay read from the database (another process completed the key, or the replay cache is
 * off): the claim that finds the committed outcome wrote nothing, so the answer goes out after
 * that round trip and the transaction's ROLLBACK follows without being waited for.
 */
describe('replays from the database', () => {
  let app: INestApplication;
  let dataSource: DataSource;
  const originalQuery = Client.prototype.query;
  let rollbacks = 0;

  beforeAll(async () => {
    ({ app, dataSource } = await createLibraryApp(
      IdempotencyModule.forRoot({ replayCache: false, cleanup: false }),
      undefined,
      { poolSize: 2 },
    ));
    // Every ROLLBACK of the run takes a second more: an answer that waited for one shows it.
    Client.prototype.query = function (this: Client, ...args: unknown[]) {
      if (args[0] === 'ROLLBACK') {
        rollbacks++;
        return new Promise((resolve) => setTimeout(resolve, ROLLBACK_DELAY_MS)).then(() =>
          (originalQuery as (...a: unknown[]) => unknown).apply(this, args),
        );
      }
      return (originalQuery as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof Client.prototype.query;
  });
  afterAll(async () => {
    Client.prototype.query = originalQuery;
    await app.close();
  });

  it('answers without waiting for the ROLLBACK, and the connection comes back to the pool', async () => {
    const key = randomUUID();
    const tag = randomUUID();
    const post = () =>
      request(app.getHttpServer()).post('/widgets').set('idempotency-key', key).send({ tag });
    const first = await post();
    expect(first.status).toBe(201);
    const before = rollbacks;
    const started = performance.now();
    const replay = await post();
    const elapsed = performance.now() - started;
    expect(replay.status).toBe(201);
    expect(replay.text).toBe(first.text);
    expect(rollbacks).toBe(before + 1);
    expect(elapsed).toBeLessThan(ROLLBACK_DELAY_MS);
    // A pool of 2: three more replays and a fresh create each get a connection once its
    // ROLLBACK is through, and nothing is written twice.
    for (let i = 0; i < 3; i++) expect((await post()).text).toBe(first.text);
    const fresh = await request(app.getHttpServer())
      .post('/widgets')
      .set('idempotency-key', randomUUID())
      .send({ tag });
    expect(fresh.status).toBe(201);
    const rows = await dataSource.query<{ n: string }[]>(
      'SELECT count(*) AS n FROM library_test_effects WHERE tag = $1',
      [tag],
    );
    expect(Number(rows[0].n)).toBe(2);
    // Once the last ROLLBACK is through, every connection is back in the pool, idle.
    await new Promise((resolve) => setTimeout(resolve, ROLLBACK_DELAY_MS + 200));
    const pool = (
      dataSource.driver as unknown as { master: { totalCount: number; idleCount: number } }
    ).master;
    expect(pool.idleCount).toBe(pool.totalCount);
  });

  it("reads the stored bytes whatever the app's own type parsers make of json and bytea", async () => {
    // An app may keep json as text, or read bytea its own way: the library reads the row that
    // beat its claim as text of its own, so neither changes what a replay sends.
    const key = randomUUID();
    const tag = `zoë ✓ ${key}`;
    const post = () =>
      request(app.getHttpServer()).post('/widgets').set('idempotency-key', key).send({ tag });
    const first = await post();
    expect(first.status).toBe(201);
    const replay = await withAppTypeParsers(() => post());
    expect(replay.status).toBe(201);
    expect(replay.headers['content-type']).toBe(first.headers['content-type']);
    expect(Buffer.from(replay.text)).toEqual(Buffer.from(first.text));
    expect((replay.body as { tag: string }).tag).toBe(tag);
    const rows = await dataSource.query<{ n: string }[]>(
      'SELECT count(*) AS n FROM library_test_effects WHERE tag = $1',
      [tag],
    );
    expect(Number(rows[0].n)).toBe(1);
  });
});
