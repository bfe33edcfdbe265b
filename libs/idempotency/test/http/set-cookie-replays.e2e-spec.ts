import { Body, Controller, type INestApplication, Post, Res, ValidationPipe } from '@nestjs/common';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { IsString } from 'class-validator';
import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { IdempotencyModule, Idempotent } from 'nestjs-pg-idempotency';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { createLibraryApp, Effects } from './library-app';
import { libraryInfrastructure } from '../support/library-infrastructure';
import { migrateTestDatabase } from '../support/migrations';

/** The names of a response's cookies, in order. */
const cookieNames = (res: request.Response) =>
  ((res.headers['set-cookie'] as unknown as string[] | undefined) ?? []).map(
    (cookie) => cookie.split('=')[0],
  );

/**
 * A key's first answer on `app`, a replay from the database on `appNoCache`, then three
 * replays from `app`'s replay cache: each carries the stored cookies and one of its own.
 */
async function replaysTheSameCookies(
  app: INestApplication,
  appNoCache: INestApplication,
  path: string,
): Promise<void> {
  const key = `k-${randomUUID()}`;
  const tag = `t-${randomUUID()}`;
  const post = (target: INestApplication) =>
    request(target.getHttpServer()).post(path).set('Idempotency-Key', key).send({ tag });
  const expected = ['sid', 'csrf', 'visit'];
  expect(cookieNames(await post(app))).toEqual(expected);
  expect(cookieNames(await post(appNoCache))).toEqual(expected);
  const replays: string[][] = [];
  for (let i = 0; i < 3; i++) replays.push(cookieNames(await post(app)));
  expect(replays).toEqual([expected, expected, expected]);
}

class TagDto {
  @IsString()
  tag: string;
}

@Controller('fastify-cookies')
class FastifyCookieController {
  constructor(private readonly effects: Effects) {}

  /** Logs the client in: two cookies, stored (`storedHeaders: ['set-cookie']`). */
  @Post()
  @Idempotent()
  async login(
    @Body() body: TagDto,
    @Res({ passthrough: true }) reply: { header(name: string, value: string | string[]): void },
  ) {
    const id = await this.effects.record('fastify-cookies', body.tag);
    reply.header('set-cookie', [`sid=${id}; Path=/`, `csrf=c${id}; Path=/`]);
    return { id };
  }
}

/**
 * Fastify's `reply.header('set-cookie', x)` appends to what is already set, and keeps the array
 * it is given. The first answer carries the handler's cookies once, and a cookie a later hook
 * adds (a rolling session, `@fastify/cookie`'s onSend) goes on that response only: every replay,
 * from the replay cache as from the database, carries the stored cookies and its own.
 */
describe('stored Set-Cookie on Fastify', () => {
  let app: NestFastifyApplication;
  let appNoCache: NestFastifyApplication;
  let hookCalls = 0;

  const build = async (replayCache: false | undefined): Promise<NestFastifyApplication> => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        ...libraryInfrastructure(),
        IdempotencyModule.forRoot({
          cleanup: false,
          storedHeaders: ['set-cookie'],
          ...(replayCache === false ? { replayCache: false } : {}),
        }),
      ],
      controllers: [FastifyCookieController],
      providers: [Effects],
    }).compile();
    const created = moduleRef.createNestApplication<NestFastifyApplication>(new FastifyAdapter(), {
      logger: false,
    });
    created.useGlobalPipes(new ValidationPipe({ transform: true }));
    // Any per-response cookie of the app's own (a rolling session, a tracking cookie).
    created
      .getHttpAdapter()
      .getInstance()
      .addHook(
        'onSend',
        (
          _request: unknown,
          reply: { header(n: string, v: string): void },
          payload: unknown,
          done: (error: null, payload: unknown) => void,
        ) => {
          hookCalls++;
          reply.header('set-cookie', `visit=${hookCalls}; Path=/`);
          done(null, payload);
        },
      );
    await migrateTestDatabase(created.get(DataSource));
    await created.init();
    await created.getHttpAdapter().getInstance().ready();
    return created;
  };

  beforeAll(async () => {
    app = await build(undefined);
    appNoCache = await build(false);
  });
  afterAll(async () => {
    await app?.close();
    await appNoCache?.close();
  });

  const post = (target: INestApplication, key: string, tag: string) =>
    request(target.getHttpServer())
      .post('/fastify-cookies')
      .set('Idempotency-Key', key)
      .send({ tag });

  it('sends the handler cookies once on the first answer (as every replay does), replay cache or not', async () => {
    for (const target of [appNoCache, app]) {
      const first = await post(target, `k-${randomUUID()}`, `t-${randomUUID()}`);
      expect(first.status).toBe(201);
      expect(cookieNames(first)).toEqual(['sid', 'csrf', 'visit']);
    }
  });

  it('replays the same cookies from the replay cache as from the database, however often', () =>
    replaysTheSameCookies(app, appNoCache, '/fastify-cookies'));
});

@Controller('express-cookies')
class ExpressCookieController {
  constructor(private readonly effects: Effects) {}

  @Post()
  @Idempotent()
  async login(@Body() body: TagDto, @Res({ passthrough: true }) res: ServerResponse) {
    const id = await this.effects.record('express-cookies', body.tag);
    res.setHeader('set-cookie', [`sid=${id}; Path=/`, `csrf=c${id}; Path=/`]);
    return { id };
  }
}

/**
 * What the `cookies` package (under cookie-session, among others) does when it sets a cookie as
 * the headers go out: reads the Set-Cookie array with getHeader, pushes onto it, sets it back.
 * Node's getHeader hands out the array it was given: the library's must be a copy, or the push
 * lands in the replay cache's entry.
 */
function rollingCookie(_req: unknown, res: ServerResponse, next: () => void): void {
  let n = 0;
  const writeHead = res.writeHead;
  res.writeHead = function (this: ServerResponse, ...args: unknown[]) {
    const current = res.getHeader('Set-Cookie');
    const headers = Array.isArray(current) ? current : current ? [String(current)] : [];
    headers.push(`visit=${++n}; Path=/`);
    res.setHeader('Set-Cookie', headers);
    return (writeHead as (...a: unknown[]) => ServerResponse).apply(this, args);
  };
  next();
}

describe('stored Set-Cookie on Express, with cookie middleware', () => {
  let app: INestApplication;
  let appNoCache: INestApplication;

  beforeAll(async () => {
    const configure = (created: INestApplication) => created.use(rollingCookie);
    app = (
      await createLibraryApp(
        IdempotencyModule.forRoot({ cleanup: false, storedHeaders: ['set-cookie'] }),
        configure,
        {},
        { controllers: [ExpressCookieController] },
      )
    ).app;
    appNoCache = (
      await createLibraryApp(
        IdempotencyModule.forRoot({
          cleanup: false,
          replayCache: false,
          storedHeaders: ['set-cookie'],
        }),
        configure,
        {},
        { controllers: [ExpressCookieController] },
      )
    ).app;
  });
  afterAll(async () => {
    await app?.close();
    await appNoCache?.close();
  });

  it('replays the same cookies from the replay cache as from the database, however often', () =>
    replaysTheSameCookies(app, appNoCache, '/express-cookies'));
});
