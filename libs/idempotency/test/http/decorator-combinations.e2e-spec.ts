import {
  Body,
  Controller,
  Get,
  type INestApplication,
  Post,
  UseInterceptors,
} from '@nestjs/common';
import { APP_INTERCEPTOR } from '@nestjs/core';
import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { IdempotencyInterceptor, IdempotencyModule, Idempotent } from 'nestjs-pg-idempotency';
import { IsString } from 'class-validator';
import type { DataSource } from 'typeorm';
import { createLibraryApp, Effects } from './library-app';

class TagDto {
  @IsString()
  tag: string;
}

/** The module's, the class's and the method's options, all three in play. */
@Controller('ledger')
@Idempotent({ ttlSeconds: 600 })
class LedgerController {
  constructor(private readonly effects: Effects) {}

  @Post('deposits')
  @Idempotent({ ttlSeconds: 120, scope: 'deposits' })
  async deposit(@Body() body: TagDto) {
    return { id: await this.effects.record('deposits', body.tag) };
  }

  /** Only the class's options. */
  @Post('withdrawals')
  async withdraw(@Body() body: TagDto) {
    return { id: await this.effects.record('withdrawals', body.tag) };
  }

  /** A method option that does not name a field leaves the class's value: required stays true. */
  @Post('fees')
  @Idempotent({ scope: 'fees' })
  async fee(@Body() body: TagDto) {
    return { id: await this.effects.record('fees', body.tag) };
  }

  @Get()
  list() {
    return { entries: [] };
  }
}

/** The interceptor added by hand beside the decorator. */
@Controller('transfers')
class TransfersController {
  constructor(private readonly effects: Effects) {}

  @Post()
  @Idempotent({ ttlSeconds: 300 })
  @UseInterceptors(IdempotencyInterceptor)
  async transfer(@Body() body: TagDto) {
    return { id: await this.effects.record('transfers', body.tag) };
  }

  /** The interceptor without the decorator: no options, so nothing to do. */
  @Post('plain')
  @UseInterceptors(IdempotencyInterceptor)
  async plain(@Body() body: TagDto) {
    return { id: await this.effects.record('transfers/plain', body.tag) };
  }
}

describe.each([
  ['decorators only', false],
  ['decorators and a global IdempotencyInterceptor', true],
])('@Idempotent() on a class and its methods (%s)', (_name, globalInterceptor) => {
  let app: INestApplication;
  let dataSource: DataSource;
  beforeAll(async () => {
    ({ app, dataSource } = await createLibraryApp(
      IdempotencyModule.forRoot({ ttlSeconds: 3600, replayCache: false }),
      undefined,
      {},
      {
        controllers: [LedgerController, TransfersController],
        providers: globalInterceptor
          ? [{ provide: APP_INTERCEPTOR, useExisting: IdempotencyInterceptor }]
          : [],
      },
    ));
  });
  afterAll(() => app.close());

  const post = (path: string, tag: string, key?: string) =>
    request(app.getHttpServer())
      .post(path)
      .set(key ? { 'idempotency-key': key } : {})
      .send({ tag });

  async function effects(tag: string): Promise<string[]> {
    const rows: { route: string }[] = await dataSource.query(
      'SELECT route FROM library_test_effects WHERE tag = $1 ORDER BY id',
      [tag],
    );
    return rows.map((row) => row.route);
  }

  async function keyRows(key: string) {
    return dataSource.query(
      `SELECT endpoint, status, extract(epoch FROM expires_at - created_at)::int AS ttl
         FROM idempotency_keys WHERE idem_key = $1`,
      [key],
    );
  }

  it("runs once with a method's options merged over the class's: its ttl and scope, one row, one effect", async () => {
    const key = randomUUID();
    const tag = randomUUID();
    const first = await post('/ledger/deposits', tag, key).expect(201);
    const retry = await post('/ledger/deposits', tag, key).expect(201);
    expect(retry.text).toBe(first.text);
    expect(await effects(tag)).toEqual(['deposits']);
    expect(await keyRows(key)).toEqual([{ endpoint: 'deposits', status: 'completed', ttl: 120 }]);
  });

  it("takes the class's options on a method without its own, over the module's", async () => {
    const key = randomUUID();
    const tag = randomUUID();
    await post('/ledger/withdrawals', tag, key).expect(201);
    await post('/ledger/withdrawals', tag, key).expect(201);
    expect(await effects(tag)).toEqual(['withdrawals']);
    expect(await keyRows(key)).toEqual([
      { endpoint: 'POST /ledger/withdrawals', status: 'completed', ttl: 600 },
    ]);
  });

  it("keeps the class's ttl and the default required key where the method sets only a scope", async () => {
    const key = randomUUID();
    const tag = randomUUID();
    await post('/ledger/fees', tag).expect(400);
    await post('/ledger/fees', tag, key).expect(201);
    expect(await effects(tag)).toEqual(['fees']);
    expect(await keyRows(key)).toEqual([{ endpoint: 'fees', status: 'completed', ttl: 600 }]);
  });

  it('runs once with the interceptor also added by hand', async () => {
    const key = randomUUID();
    const tag = randomUUID();
    const first = await post('/transfers', tag, key).expect(201);
    const retry = await post('/transfers', tag, key).expect(201);
    expect(retry.text).toBe(first.text);
    expect(await effects(tag)).toEqual(['transfers']);
    expect(await keyRows(key)).toEqual([
      { endpoint: 'POST /transfers', status: 'completed', ttl: 300 },
    ]);
  });

  it('leaves a route with the interceptor but no @Idempotent() alone', async () => {
    const key = randomUUID();
    const tag = randomUUID();
    await post('/transfers/plain', tag, key).expect(201);
    await post('/transfers/plain', tag, key).expect(201);
    expect(await effects(tag)).toEqual(['transfers/plain', 'transfers/plain']);
    expect(await keyRows(key)).toEqual([]);
  });

  it('leaves GET on a class-level controller untouched: no key needed, no row', async () => {
    const key = randomUUID();
    const response = await request(app.getHttpServer())
      .get('/ledger')
      .set('idempotency-key', key)
      .expect(200);
    expect(response.body).toEqual({ entries: [] });
    expect(await keyRows(key)).toEqual([]);
  });
});
