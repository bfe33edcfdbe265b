import { randomUUID } from 'node:crypto';
import {
  Body,
  Controller,
  type INestApplication,
  Post,
  Version,
  VersioningType,
} from '@nestjs/common';
import { IdempotencyModule, Idempotent } from 'nestjs-pg-idempotency';
import request from 'supertest';
import { TestDatabase } from '../support/test-database';
import { createLibraryApp, Effects } from './library-app';

@Controller('versioned')
class VersionedController {
  constructor(private readonly effects: Effects) {}

  @Post()
  @Version('1')
  @Idempotent()
  async v1(@Body() body: { tag: string }) {
    return { version: 1, id: await this.effects.record('versioned-v1', body.tag) };
  }

  @Post()
  @Version('2')
  @Idempotent()
  async v2(@Body() body: { tag: string }) {
    return { version: 2, id: await this.effects.record('versioned-v2', body.tag) };
  }
}

function hostedController(host: string, route: string) {
  @Controller({ path: 'hosted', host })
  class HostedController {
    constructor(readonly effects: Effects) {}

    @Post()
    @Idempotent()
    async create(@Body() body: { tag: string }) {
      return { route, id: await this.effects.record(route, body.tag) };
    }
  }
  return HostedController;
}

/**
 * Two handlers on one method and path, told apart by Nest by the request's version header or
 * its host: the same key sent to the second is another request (422), never the first
 * handler's response, and the second handler's effect is not skipped in silence.
 */
describe('handlers that share a method and path (versions, hosts)', () => {
  let app: INestApplication;
  const db = new TestDatabase();
  beforeAll(async () => {
    ({ app } = await createLibraryApp(
      IdempotencyModule.forRoot({ replayCache: false, cleanup: false }),
      (nest) => nest.enableVersioning({ type: VersioningType.HEADER, header: 'x-api-version' }),
      {},
      {
        controllers: [
          VersionedController,
          hostedController('admin.example.com', 'hosted-admin'),
          hostedController('api.example.com', 'hosted-api'),
          hostedController(':account.tenant.test', 'hosted-account'),
        ],
      },
    ));
  });
  afterAll(async () => {
    await app.close();
    await db.close();
  });

  const postHosted = (host: string, key: string, tag: string) =>
    request(app.getHttpServer())
      .post('/hosted')
      .set('host', host)
      .set('idempotency-key', key)
      .send({ tag });

  const effects = async (tag: string) =>
    (
      await db.query<{ route: string }>(
        'SELECT route FROM library_test_effects WHERE tag = $1 ORDER BY id',
        [tag],
      )
    ).map((row) => row.route);

  it('refuses the key of version 1 on version 2 with 422, and still replays version 1', async () => {
    const key = randomUUID();
    const tag = `versioned-${key}`;
    const send = (version: string) =>
      request(app.getHttpServer())
        .post('/versioned')
        .set('x-api-version', version)
        .set('idempotency-key', key)
        .send({ tag });
    const first = await send('1');
    expect(first.status).toBe(201);
    expect(first.body.version).toBe(1);
    const other = await send('2');
    expect({ status: other.status, type: other.body.type }).toEqual({
      status: 422,
      type: 'urn:idempotency:key-reused',
    });
    expect((await send('1')).text).toBe(first.text);
    expect(await effects(tag)).toEqual(['versioned-v1']);
    // Under a key of its own, version 2 runs its own handler.
    const own = await request(app.getHttpServer())
      .post('/versioned')
      .set('x-api-version', '2')
      .set('idempotency-key', randomUUID())
      .send({ tag });
    expect(own.body.version).toBe(2);
  });

  it('refuses the key of one host’s controller on the other host’s with 422', async () => {
    const key = randomUUID();
    const tag = `hosted-${key}`;
    const send = (host: string) => postHosted(host, key, tag);
    const first = await send('admin.example.com');
    expect(first.body.route).toBe('hosted-admin');
    expect((await send('api.example.com')).status).toBe(422);
    expect((await send('admin.example.com')).text).toBe(first.text);
    expect(await effects(tag)).toEqual(['hosted-admin']);
  });

  it('counts the parameters of a host pattern as the path’s: another account is another request', async () => {
    const key = randomUUID();
    const tag = `account-${key}`;
    const send = (host: string) => postHosted(host, key, tag);
    const first = await send('acme.tenant.test');
    expect(first.body.route).toBe('hosted-account');
    expect((await send('globex.tenant.test')).status).toBe(422);
    expect((await send('acme.tenant.test')).text).toBe(first.text);
    expect(await effects(tag)).toEqual(['hosted-account']);
  });
});
