import { randomUUID } from 'node:crypto';
import type { INestApplication } from '@nestjs/common';
import { ApplicationConfig } from '@nestjs/core';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { IdempotencyModule } from 'nestjs-pg-idempotency';
import request from 'supertest';
import type { DataSource } from 'typeorm';
import { createLibraryApp, Effects } from './library-app';

const tag = () => `t-${randomUUID()}`;
const key = () => `k-${randomUUID()}`;

/**
 * The package README's lean set-up: the transactional plugin through
 * `ClsModule.registerPlugins`, no `ClsModule.forRoot`, so no CLS guard or interceptor on any
 * route. The library opens its own CLS context; the guarantee must hold as with `forRoot`.
 */
describe('the transactional plugin registered alone (ClsModule.registerPlugins)', () => {
  let app: INestApplication;
  let dataSource: DataSource;

  beforeAll(async () => {
    ({ app, dataSource } = await createLibraryApp(
      IdempotencyModule.forRoot({ cleanup: false }),
      undefined,
      { pluginOnly: true },
    ));
  });
  afterAll(() => app.close());

  async function effectCount(tagValue: string): Promise<number> {
    const [row] = await dataSource.query<{ count: number }[]>(
      'SELECT count(*)::int AS count FROM library_test_effects WHERE tag = $1',
      [tagValue],
    );
    return row.count;
  }

  async function keyStatus(idemKey: string): Promise<{ status: string; response_code: number }[]> {
    return dataSource.query(
      'SELECT status, response_code FROM idempotency_keys WHERE idem_key = $1',
      [idemKey],
    );
  }

  it('puts no global guard or interceptor on the app', () => {
    const config = app.get(ApplicationConfig);
    expect(config.getGlobalGuards()).toHaveLength(0);
    expect(config.getGlobalInterceptors()).toHaveLength(0);
  });

  it('runs a create once, replays its bytes, and records the key with the effect', async () => {
    const idemKey = key();
    const body = { tag: tag() };
    const post = () =>
      request(app.getHttpServer()).post('/widgets').set('idempotency-key', idemKey).send(body);
    const first = await post();
    expect(first.status).toBe(201);
    const replay = await post();
    expect(replay.status).toBe(201);
    expect(replay.text).toBe(first.text);
    expect(await effectCount(body.tag)).toBe(1);
    expect(await keyStatus(idemKey)).toEqual([{ status: 'completed', response_code: 201 }]);
  });

  it('runs the handler once for duplicates sent together', async () => {
    const idemKey = key();
    const body = { tag: tag() };
    const answers = await Promise.all(
      Array.from({ length: 6 }, () =>
        request(app.getHttpServer()).post('/slow').set('idempotency-key', idemKey).send(body),
      ),
    );
    const created = answers.filter((answer) => answer.status === 201);
    expect(created.length).toBeGreaterThan(0);
    expect(new Set(created.map((answer) => answer.text)).size).toBe(1);
    expect(answers.every((answer) => answer.status === 201 || answer.status === 409)).toBe(true);
    expect(await effectCount(body.tag)).toBe(1);
  });

  it('stores a declined request without its writes, and refuses the key for another body', async () => {
    const idemKey = key();
    const body = { tag: tag() };
    const post = (sent: object) =>
      request(app.getHttpServer()).post('/declined').set('idempotency-key', idemKey).send(sent);
    const first = await post(body);
    expect(first.status).toBe(422);
    const replay = await post(body);
    expect(replay.status).toBe(422);
    expect(replay.text).toBe(first.text);
    expect(await effectCount(body.tag)).toBe(0);
    expect(await keyStatus(idemKey)).toEqual([{ status: 'completed', response_code: 422 }]);
    const other = await post({ tag: tag() });
    expect(other.status).toBe(422);
    expect(other.headers['content-type']).toContain('application/problem+json');
    expect(JSON.parse(other.text)).toMatchObject({ type: 'urn:idempotency:key-reused' });
  });

  it('lets withTransaction open its own context outside any request', async () => {
    const host = app.get<TransactionHost<TransactionalAdapterTypeOrm>>(TransactionHost);
    const effects = app.get(Effects);
    const committed = tag();
    await host.withTransaction(() => effects.record('outside', committed));
    expect(await effectCount(committed)).toBe(1);
    const rolledBack = tag();
    await expect(
      host.withTransaction(async () => {
        await effects.record('outside', rolledBack);
        throw new Error('abandoned');
      }),
    ).rejects.toThrow('abandoned');
    expect(await effectCount(rolledBack)).toBe(0);
  });
});
