import type { INestApplication } from '@nestjs/common';
import { createHook } from 'node:async_hooks';
import crypto from 'node:crypto';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import request from 'supertest';
import { IdempotencyModule } from 'nestjs-pg-idempotency';
import type { DataSource } from 'typeorm';
import { createLibraryApp } from './library-app';

/**
 * What the library's own code does per request, counted rather than timed: every promise is an
 * allocation, a microtask and, with nestjs-cls's AsyncLocalStorage on, an async hook call. The
 * counts are exact, so a change that adds an await to the hot path fails here, where a timed
 * benchmark would lose it in its noise.
 */
const LIBRARY_SOURCE = join('libs', 'idempotency', 'src');

/** Promises made by frames of the library's source while `send` runs. */
async function libraryPromisesDuring(send: () => Promise<void>): Promise<number> {
  let made = 0;
  const hook = createHook({
    init(_asyncId, type) {
      if (type !== 'PROMISE') return;
      // The frame that made the promise: the first below this hook that is neither Node's
      // own nor a builtin (`Promise.then`, `new Promise`).
      const maker = new Error().stack
        ?.split('\n')
        .slice(1)
        .find(
          (frame) =>
            !frame.includes('<anonymous>') &&
            !frame.includes('node:') &&
            !frame.includes(__filename),
        );
      if (maker?.includes(LIBRARY_SOURCE)) made++;
    },
  });
  hook.enable();
  try {
    await send();
  } finally {
    hook.disable();
  }
  return made;
}

/** Calls of `crypto.hash` (the fingerprint's SHA-256, and the log label's) while `send` runs. */
async function hashesDuring(send: () => Promise<void>): Promise<number> {
  const original = crypto.hash;
  let calls = 0;
  (crypto as { hash: typeof crypto.hash }).hash = ((...args: Parameters<typeof crypto.hash>) => {
    calls++;
    return original(...args);
  }) as typeof crypto.hash;
  try {
    await send();
  } finally {
    (crypto as { hash: typeof crypto.hash }).hash = original;
  }
  return calls;
}

describe('the hot path, counted', () => {
  let app: INestApplication;
  let dataSource: DataSource;

  beforeAll(async () => {
    // No cleanup timer: nothing of the library may run beside the counted requests.
    ({ app, dataSource } = await createLibraryApp(IdempotencyModule.forRoot({ cleanup: false })));
  });

  afterAll(async () => {
    await app.close();
  });

  const create = (key: string, tag: string) =>
    request(app.getHttpServer())
      .post('/widgets')
      .set('Idempotency-Key', key)
      .send({ tag, size: 1 })
      .expect(201);

  it('a create makes at most 21 promises of the library, a replay from the cache none', async () => {
    const tag = `budget-${randomUUID()}`;
    // Warm: the first request on a connection prepares the key statements.
    for (let i = 0; i < 3; i++) await create(`warm-${randomUUID()}`, tag);
    const requests = 10;
    const keys = Array.from({ length: requests }, () => `budget-${randomUUID()}`);
    const perCreate =
      (await libraryPromisesDuring(async () => {
        for (const key of keys) await create(key, tag);
      })) / requests;
    const perReplay =
      (await libraryPromisesDuring(async () => {
        for (const key of keys) await create(key, tag);
      })) / requests;
    const rows: { n: number }[] = await dataSource.query(
      'SELECT count(*)::int AS n FROM library_test_effects WHERE tag = $1',
      [tag],
    );
    // The counts are of real creates and replays: one effect per key, the replays added none.
    expect(rows[0].n).toBe(requests + 3);
    // 43 and 10 before they were counted, then 21 and 2; raise them only for a reason worth its
    // promises. A replay from the cache is decided synchronously: an await there fails this.
    expect(perCreate).toBeLessThanOrEqual(21);
    expect(perReplay).toBe(0);
  });

  it('a replay from the cache that repeats its first request hashes nothing; another body still meets the fingerprint', async () => {
    const tag = `hash-${randomUUID()}`;
    const keys = Array.from({ length: 5 }, () => `hash-${randomUUID()}`);
    const creating = await hashesDuring(async () => {
      for (const key of keys) await create(key, tag);
    });
    // The fingerprint of each create, and nothing else: the app logs nothing (`logger: false`),
    // so no debug line asks for the key's label, another SHA-256 (two per create before).
    expect(creating).toBe(keys.length);
    const replaying = await hashesDuring(async () => {
      for (const key of keys) await create(key, tag);
    });
    expect(replaying).toBe(0);
    // Not the same text: the fingerprint decides, and a body that only spells out a default
    // (`size: 1`) is the same request, while another size is not.
    const explicit = await hashesDuring(async () => {
      await request(app.getHttpServer())
        .post('/widgets')
        .set('Idempotency-Key', keys[0])
        .send({ size: 1, tag })
        .expect(201);
    });
    expect(explicit).toBe(1);
    await request(app.getHttpServer())
      .post('/widgets')
      .set('Idempotency-Key', keys[0])
      .send({ size: 2, tag })
      .expect(422);
    const rows: { n: number }[] = await dataSource.query(
      'SELECT count(*)::int AS n FROM library_test_effects WHERE tag = $1',
      [tag],
    );
    expect(rows[0].n).toBe(keys.length);
  });
});
