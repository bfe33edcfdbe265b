import { randomUUID } from 'node:crypto';
import {
  Body,
  type CallHandler,
  ClassSerializerInterceptor,
  Controller,
  type ExecutionContext,
  type INestApplication,
  type NestInterceptor,
  Post,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { IdempotencyModule, Idempotent } from 'nestjs-pg-idempotency';
import { map } from 'rxjs';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { libraryInfrastructure } from '../support/library-infrastructure';
import { migrateTestDatabase } from '../support/migrations';

/** The same text answer with the library and without it. */
@Controller('greeting')
class GreetingController {
  @Post('idempotent')
  @Idempotent()
  idempotent(@Body() body: { name: string }) {
    return `<b>hello ${body.name}</b>`;
  }

  @Post('plain')
  plain(@Body() body: { name: string }) {
    return `<b>hello ${body.name}</b>`;
  }

  /** A result whose JSON is a string. */
  @Post('date/idempotent')
  @Idempotent()
  dateIdempotent() {
    return new Date(0);
  }

  @Post('date/plain')
  datePlain() {
    return new Date(0);
  }

  @Post('empty/idempotent')
  @Idempotent()
  emptyIdempotent() {
    return '';
  }

  @Post('empty/plain')
  emptyPlain() {
    return '';
  }
}

/** A response-wrapping interceptor, as many apps register globally. */
class WrapInterceptor implements NestInterceptor {
  intercept(_context: ExecutionContext, next: CallHandler) {
    return next.handle().pipe(map((data: unknown) => ({ data })));
  }
}

type Around = 'nothing' | 'a { data } wrapper' | 'a ClassSerializerInterceptor';

async function build(platform: 'express' | 'fastify', around: Around): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({
    imports: [...libraryInfrastructure(), IdempotencyModule.forRoot({ cleanup: false })],
    controllers: [GreetingController],
  }).compile();
  const app =
    platform === 'fastify'
      ? moduleRef.createNestApplication(new FastifyAdapter(), { logger: false })
      : moduleRef.createNestApplication({ logger: false });
  if (around === 'a { data } wrapper') app.useGlobalInterceptors(new WrapInterceptor());
  if (around === 'a ClassSerializerInterceptor')
    app.useGlobalInterceptors(new ClassSerializerInterceptor(app.get(Reflector)));
  await migrateTestDatabase(app.get(DataSource));
  await app.init();
  if (platform === 'fastify') await app.getHttpAdapter().getInstance().ready();
  return app;
}

/**
 * A handler that returns text answers as the framework answers it without the library (Fastify
 * `text/plain`, not Express's `text/html`), and an interceptor around the route that makes an
 * object of it gets JSON, on the first answer and on its replay alike. So does one whose result's
 * JSON is a string: an interceptor around the route sees the string, not its quoted JSON.
 */
describe.each([
  ['express', 'nothing'],
  ['express', 'a { data } wrapper'],
  ['express', 'a ClassSerializerInterceptor'],
  ['fastify', 'nothing'],
  ['fastify', 'a { data } wrapper'],
  ['fastify', 'a ClassSerializerInterceptor'],
] as const)('a string result on %s, with %s around the route', (platform, around) => {
  let app: INestApplication;
  beforeAll(async () => {
    app = await build(platform, around);
  });
  afterAll(() => app.close());

  const post = (path: string, key?: string) => {
    const sent = request(app.getHttpServer()).post(`/greeting/${path}`).send({ name: 'ann' });
    return key ? sent.set('idempotency-key', key) : sent;
  };

  it.each([
    ['text', ''],
    ['a JSON string (a Date)', 'date/'],
  ])(
    'answers %s as the route without the library does, first time and on replay',
    async (_, prefix) => {
      const plain = await post(`${prefix}plain`);
      const key = randomUUID();
      const first = await post(`${prefix}idempotent`, key);
      const replay = await post(`${prefix}idempotent`, key);

      expect(plain.status).toBe(201);
      for (const answer of [first, replay]) {
        expect(answer.status).toBe(201);
        expect(answer.text).toBe(plain.text);
        expect(answer.headers['content-type']).toBe(plain.headers['content-type']);
      }
    },
  );

  it('answers an empty text the same way first time and on replay, and never fails', async () => {
    const plain = await post('empty/plain');
    const key = randomUUID();
    const first = await post('empty/idempotent', key);
    const replay = await post('empty/idempotent', key);

    for (const answer of [first, replay]) {
      expect(answer.status).toBe(201);
      expect(answer.text).toBe(first.text);
      expect(answer.headers['content-type']).toBe(first.headers['content-type']);
    }
    // On Express without a wrapper the text keeps Express's own type, as without the library.
    if (platform === 'express' && around !== 'a { data } wrapper')
      expect(first.headers['content-type']).toBe(plain.headers['content-type']);
  });
});
