import { randomUUID } from 'node:crypto';
import {
  BadRequestException,
  Body,
  Controller,
  type INestApplication,
  Post,
  Res,
  ServiceUnavailableException,
  UnprocessableEntityException,
} from '@nestjs/common';
import { type IdempotencyEvent, IdempotencyModule, Idempotent } from 'nestjs-pg-idempotency';
import request from 'supertest';
import { TestDatabase } from '../support/test-database';
import { createLibraryApp, Effects } from './library-app';

@Controller('answers')
class AnswersController {
  constructor(private readonly effects: Effects) {}

  /** Points at what it wrote, as a create does, then a later check declines: a stored 422. */
  @Post('declined-after-location')
  @Idempotent()
  async declinedAfterLocation(
    @Body() body: { tag: string },
    @Res({ passthrough: true }) res: { setHeader(name: string, value: string): void },
  ) {
    const id = await this.effects.record('answers/declined', body.tag);
    res.setHeader('location', `/things/${id}`);
    throw new UnprocessableEntityException('declined');
  }

  /** Points at what it wrote, then a dependency fails: a 503, the key released. */
  @Post('unavailable-after-location')
  @Idempotent()
  async unavailableAfterLocation(
    @Body() body: { tag: string },
    @Res({ passthrough: true }) res: { setHeader(name: string, value: string): void },
  ) {
    const id = await this.effects.record('answers/unavailable', body.tag);
    res.setHeader('location', `/things/${id}`);
    throw new ServiceUnavailableException('the warehouse did not answer');
  }

  /** Points at what it wrote, then answers a 503 it returns instead of throwing: released. */
  @Post('returned-unavailable-after-location')
  @Idempotent()
  async returnedUnavailableAfterLocation(
    @Body() body: { tag: string },
    @Res({ passthrough: true })
    res: { setHeader(name: string, value: string): void; status(code: number): unknown },
  ) {
    const id = await this.effects.record('answers/returned-unavailable', body.tag);
    res.setHeader('location', `/things/${id}`);
    res.status(503);
    return { retry: 'later' };
  }

  @Post('optional-failing')
  @Idempotent({ required: false })
  optionalFailing() {
    throw new BadRequestException('an error of the app');
  }
}

/** What the first answer of a failure carries, and what a request without a key reports. */
describe('failure answers', () => {
  let app: INestApplication;
  const db = new TestDatabase();
  const events: IdempotencyEvent[] = [];

  beforeAll(async () => {
    ({ app } = await createLibraryApp(
      IdempotencyModule.forRoot({ cleanup: false, onEvent: (event) => events.push(event) }),
      undefined,
      {},
      { controllers: [AnswersController] },
    ));
  });

  afterAll(async () => {
    await app.close();
    await db.close();
  });

  it('sends a stored failure without the Location its handler set, as its replays do', async () => {
    const key = randomUUID();
    const tag = `declined-${key}`;
    const post = () =>
      request(app.getHttpServer())
        .post('/answers/declined-after-location')
        .set('idempotency-key', key)
        .send({ tag });
    const first = await post();
    const replay = await post();
    expect(first.status).toBe(422);
    expect(first.headers.location).toBeUndefined();
    expect(replay.status).toBe(422);
    expect(replay.headers.location).toBeUndefined();
    expect(replay.text).toBe(first.text);
    // The write it pointed at was rolled back with the failure.
    expect(await db.query(`SELECT 1 FROM library_test_effects WHERE tag = $1`, [tag])).toEqual([]);
  });

  it('sends a released failure to the app without the Location of what it rolled back', async () => {
    const key = randomUUID();
    const tag = `unavailable-${key}`;
    const res = await request(app.getHttpServer())
      .post('/answers/unavailable-after-location')
      .set('idempotency-key', key)
      .send({ tag });
    expect(res.status).toBe(503);
    expect(res.body.message).toBe('the warehouse did not answer');
    expect(res.headers.location).toBeUndefined();
    expect(await db.query(`SELECT 1 FROM library_test_effects WHERE tag = $1`, [tag])).toEqual([]);
  });

  it('sends a returned status it does not store without the Location of what it rolled back', async () => {
    const key = randomUUID();
    const tag = `returned-unavailable-${key}`;
    const res = await request(app.getHttpServer())
      .post('/answers/returned-unavailable-after-location')
      .set('idempotency-key', key)
      .send({ tag });
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ retry: 'later' });
    expect(res.headers.location).toBeUndefined();
    expect(await db.query(`SELECT 1 FROM library_test_effects WHERE tag = $1`, [tag])).toEqual([]);
  });

  it('leaves a request without a key to the app: its error as it is, no event', async () => {
    events.length = 0;
    const res = await request(app.getHttpServer()).post('/answers/optional-failing').send({});
    expect(res.status).toBe(400);
    expect(res.body.message).toBe('an error of the app');
    expect(events).toEqual([]);
  });
});

/** A tenant resolver that returns an object by mistake (the whole user, say). */
describe('a tenant resolver that returns no text', () => {
  let app: INestApplication;
  const db = new TestDatabase();

  beforeAll(async () => {
    ({ app } = await createLibraryApp(
      IdempotencyModule.forRoot({
        cleanup: false,
        tenantResolver: () => ({ id: 'acme' }) as unknown as string,
      }),
    ));
  });

  afterAll(async () => {
    await app.close();
    await db.close();
  });

  it('fails the request before anything runs, rather than share one tenant among all', async () => {
    const tag = `object-tenant-${randomUUID()}`;
    const res = await request(app.getHttpServer())
      .post('/widgets')
      .set('idempotency-key', randomUUID())
      .send({ tag });
    expect(res.status).toBe(500);
    expect(await db.query(`SELECT 1 FROM library_test_effects WHERE tag = $1`, [tag])).toEqual([]);
    expect(
      await db.query(`SELECT 1 FROM idempotency_keys WHERE tenant_id = '[object Object]'`),
    ).toEqual([]);
  });
});
