import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Body, Controller, type INestApplication, Post } from '@nestjs/common';
import { IdempotencyModule, Idempotent } from 'nestjs-pg-idempotency';
import request from 'supertest';
import { TestDatabase } from '../support/test-database';
import { createLibraryApp, Effects } from './library-app';

const TTL_SECONDS = 4;

@Controller('short-lived')
class ShortLivedController {
  constructor(private readonly effects: Effects) {}

  /** A key that lives 4 s, and a handler that holds its claim 3 s after its write. */
  @Post()
  @Idempotent({ ttlSeconds: TTL_SECONDS })
  async create(@Body() body: { tag: string }) {
    const id = await this.effects.record('short-lived', body.tag);
    await sleep(3000);
    return { id };
  }
}

/**
 * The replay cache keeps an answer no longer than its row lives. A process whose claim waited
 * seconds on a twin in another process reads the row's time left after that wait, not from its
 * transaction's start, or it would answer from memory after the row expired.
 */
describe('the replay cache after a claim that waited on a twin in another process', () => {
  let first: INestApplication;
  let second: INestApplication;
  const db = new TestDatabase();

  beforeAll(async () => {
    const extra = { controllers: [ShortLivedController] };
    const module = () => IdempotencyModule.forRoot({ lockTimeoutMs: 10_000, cleanup: false });
    ({ app: first } = await createLibraryApp(module(), undefined, {}, extra));
    ({ app: second } = await createLibraryApp(module(), undefined, {}, extra));
  });
  afterAll(async () => {
    await first.close();
    await second.close();
    await db.close();
  });

  const post = (app: INestApplication, key: string, tag: string) =>
    request(app.getHttpServer()).post('/short-lived').set('idempotency-key', key).send({ tag });
  const effects = (tag: string) =>
    db.query(`SELECT id FROM library_test_effects WHERE tag = $1`, [tag]);

  it('forgets the answer when the row expires: a retry after that runs the handler again', async () => {
    const key = randomUUID();
    const tag = randomUUID();
    const started = performance.now();
    const running = post(first, key, tag).then((response) => response);
    await sleep(200);
    // Its claim waits about 3 s on the first process's row, then replays (and caches) its answer.
    const waited = await post(second, key, tag);
    const answered = await running;
    expect(answered.status).toBe(201);
    expect(waited.text).toBe(answered.text);
    expect(await effects(tag)).toHaveLength(1);

    await sleep(Math.max(0, TTL_SECONDS * 1000 + 1200 - (performance.now() - started)));
    const [row] = await db.query<{ expired: boolean }>(
      `SELECT expires_at <= now() AS expired FROM idempotency_keys WHERE idem_key = $1`,
      [key],
    );
    expect(row.expired).toBe(true);

    // Past its time to live a key is new, on the process that waited as on the other.
    const retry = await post(second, key, tag);
    expect(retry.status).toBe(201);
    expect(retry.text).not.toBe(answered.text);
    expect(await effects(tag)).toHaveLength(2);
  }, 30_000);
});
