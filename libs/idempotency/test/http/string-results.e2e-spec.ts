import { randomUUID } from 'node:crypto';
import {
  Body,
  type CallHandler,
  Controller,
  type ExecutionContext,
  type INestApplication,
  type NestInterceptor,
  Post,
} from '@nestjs/common';
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
}

/** A response-wrapping interceptor, as many apps register globally. */
class WrapInterceptor implements NestInterceptor {
  intercept(_context: ExecutionContext, next: CallHandler) {
    return next.handle().pipe(map((data: unknown) => ({ data })));
  }
}

async function build(platform: 'express' | 'fastify', wrapped: boolean): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({
    imports: [...libraryInfrastructure(), IdempotencyModule.forRoot({ cleanup: false })],
    controllers: [GreetingController],
  }).compile();
  const app =
    platform === 'fastify'
      ? moduleRef.createNestApplication(new FastifyAdapter(), { logger: false })
      : moduleRef.createNestApplication({ logger: false });
  if (wrapped) app.useGlobalInterceptors(new WrapInterceptor());
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
  ['express', false],
  ['express', true],
  ['fastify', false],
  ['fastify', true],
] as const)('a string result on %s (a global { data } wrapper: %s)', (platform, wrapped) => {
  let app: INestApplication;
  beforeAll(async () => {
    app = await build(platform, wrapped);
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
});
