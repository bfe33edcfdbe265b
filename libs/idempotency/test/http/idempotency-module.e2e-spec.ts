import {
  type CallHandler,
  ClassSerializerInterceptor,
  type ExecutionContext,
  type INestApplication,
  Module,
  type NestInterceptor,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { map } from 'rxjs';
import { randomUUID } from 'node:crypto';
import request from 'supertest';
import {
  type IdempotencyEvent,
  IdempotencyModule,
  IdempotencyProblemType,
} from 'nestjs-pg-idempotency';
import type { DataSource } from 'typeorm';
import { createLibraryApp } from './library-app';

const tag = () => `t-${randomUUID()}`;
const key = () => `k-${randomUUID()}`;

async function effects(dataSource: DataSource, tagValue: string): Promise<string[]> {
  const rows: { route: string }[] = await dataSource.query(
    'SELECT route FROM library_test_effects WHERE tag = $1 ORDER BY id',
    [tagValue],
  );
  return rows.map((r) => r.route);
}

async function keyRows(dataSource: DataSource, idemKey: string) {
  return dataSource.query(
    `SELECT tenant_id, endpoint, status, response_code,
            extract(epoch FROM expires_at - created_at)::int AS ttl
       FROM idempotency_keys WHERE idem_key = $1 ORDER BY endpoint`,
    [idemKey],
  );
}

describe('IdempotencyModule in a bare app (forRoot, defaults but the replay cache)', () => {
  let app: INestApplication;
  let dataSource: DataSource;
  beforeAll(async () => {
    // No replay cache: these tests move rows' expiry by SQL, which a cache would not see.
    ({ app, dataSource } = await createLibraryApp(
      IdempotencyModule.forRoot({ replayCache: false }),
    ));
  });
  afterAll(() => app.close());

  const post = (path: string, body: object, headers: Record<string, string> = {}) =>
    request(app.getHttpServer()).post(path).set(headers).send(body);

  it('scopes a key by route pattern: one key on two routes runs both', async () => {
    const k = key();
    const t = tag();
    await post('/widgets', { tag: t }, { 'idempotency-key': k }).expect(201);
    await post('/gadgets', { tag: t }, { 'idempotency-key': k }).expect(201);
    expect(await effects(dataSource, t)).toEqual(['widgets', 'gadgets']);
    expect((await keyRows(dataSource, k)).map((r: { endpoint: string }) => r.endpoint)).toEqual([
      'POST /gadgets',
      'POST /widgets',
    ]);
  });

  it('keys an anonymous caller into one shared scope when no principal is on the request', async () => {
    const k = key();
    await post('/widgets', { tag: tag() }, { 'idempotency-key': k }).expect(201);
    expect(await keyRows(dataSource, k)).toEqual([expect.objectContaining({ tenant_id: '' })]);
  });

  it('puts path parameters in the fingerprint, not the scope: another id under one key is 422', async () => {
    const k = key();
    const t = tag();
    await post('/things/1', { tag: t }, { 'idempotency-key': k }).expect(201);
    const other = await post('/things/2', { tag: t }, { 'idempotency-key': k });
    expect(other.status).toBe(422);
    expect(other.body.type).toBe(IdempotencyProblemType.keyReused);
    expect(await effects(dataSource, t)).toEqual(['things/1']);
    expect(await keyRows(dataSource, k)).toEqual([
      expect.objectContaining({ endpoint: 'POST /things/:thingId' }),
    ]);
  });

  it('puts the query in the fingerprint', async () => {
    const k = key();
    const t = tag();
    const first = await post('/things/1?mode=a', { tag: t }, { 'idempotency-key': k }).expect(201);
    const same = await post('/things/1?mode=a', { tag: t }, { 'idempotency-key': k }).expect(201);
    await post('/things/1?mode=b', { tag: t }, { 'idempotency-key': k }).expect(422);
    expect(same.text).toBe(first.text);
    expect(await effects(dataSource, t)).toEqual(['things/1']);
  });

  it('reads no query where the URL has none, and takes that as the empty query', async () => {
    const k = key();
    const t = tag();
    const first = await post('/things/1', { tag: t }, { 'idempotency-key': k }).expect(201);
    // An empty query string parses to the empty query: the same request.
    const emptyQuery = await post('/things/1?', { tag: t }, { 'idempotency-key': k }).expect(201);
    await post('/things/1?mode=a', { tag: t }, { 'idempotency-key': k }).expect(422);
    expect(emptyQuery.text).toBe(first.text);
    expect(await effects(dataSource, t)).toEqual(['things/1']);
  });

  it('applies DTO defaults before hashing: an omitted default and its explicit value are one request', async () => {
    const k = key();
    const t = tag();
    const first = await post('/widgets', { tag: t }, { 'idempotency-key': k }).expect(201);
    const explicit = await post('/widgets', { size: 1, tag: t }, { 'idempotency-key': k }).expect(
      201,
    );
    await post('/widgets', { size: 2, tag: t }, { 'idempotency-key': k }).expect(422);
    expect(explicit.text).toBe(first.text);
    expect(await effects(dataSource, t)).toEqual(['widgets']);
  });

  it('runs an optional-key route unprotected without a key, and deduplicates with one', async () => {
    const t = tag();
    await post('/optional', { tag: t }).expect(201);
    await post('/optional', { tag: t }).expect(201);
    const k = key();
    await post('/optional', { tag: t }, { 'idempotency-key': k }).expect(201);
    await post('/optional', { tag: t }, { 'idempotency-key': k }).expect(201);
    expect(await effects(dataSource, t)).toEqual(['optional', 'optional', 'optional']);
    expect(await keyRows(dataSource, k)).toEqual([expect.objectContaining({ ttl: 60 })]);
  });

  it('uses the module time to live (24 h by default) on routes without their own', async () => {
    const k = key();
    await post('/widgets', { tag: tag() }, { 'idempotency-key': k }).expect(201);
    expect(await keyRows(dataSource, k)).toEqual([expect.objectContaining({ ttl: 86_400 })]);
  });

  it('shares one key space between routes given one scope name', async () => {
    const k = key();
    const t = tag();
    await post('/shared-a', { tag: t }, { 'idempotency-key': k }).expect(201);
    await post('/shared-b', { tag: t }, { 'idempotency-key': k }).expect(422);
    expect(await effects(dataSource, t)).toEqual(['shared-a']);
    expect(await keyRows(dataSource, k)).toEqual([expect.objectContaining({ endpoint: 'shared' })]);
  });

  it('replays string and empty (204) responses byte for byte', async () => {
    const k1 = key();
    const t = tag();
    const text = await post('/text', { tag: t }, { 'idempotency-key': k1 }).expect(201);
    const textAgain = await post('/text', { tag: t }, { 'idempotency-key': k1 }).expect(201);
    expect(textAgain.text).toBe(text.text);
    expect(textAgain.headers['content-type']).toBe(text.headers['content-type']);

    const k2 = key();
    const empty = await post('/empty', { tag: t }, { 'idempotency-key': k2 }).expect(204);
    const emptyAgain = await post('/empty', { tag: t }, { 'idempotency-key': k2 }).expect(204);
    expect(emptyAgain.text).toBe(empty.text);
    expect(emptyAgain.headers['content-type']).toBe(empty.headers['content-type']);
    expect(await effects(dataSource, t)).toEqual(['text', 'empty']);
  });

  it('releases the key when the handler throws a non-HTTP error', async () => {
    const k = key();
    const t = tag();
    await post('/crash', { tag: t }, { 'idempotency-key': k }).expect(500);
    await post('/crash', { tag: t }, { 'idempotency-key': k }).expect(500);
    expect(await effects(dataSource, t)).toEqual([]);
    expect(await keyRows(dataSource, k)).toEqual([]);
  });

  it('treats an expired key as new', async () => {
    const k = key();
    const t = tag();
    const first = await post('/widgets', { tag: t }, { 'idempotency-key': k }).expect(201);
    await dataSource.query(
      `UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE idem_key = $1`,
      [k],
    );
    const again = await post('/widgets', { tag: t }, { 'idempotency-key': k }).expect(201);
    expect(again.body.id).not.toBe(first.body.id);
    expect(await effects(dataSource, t)).toEqual(['widgets', 'widgets']);
    expect(await keyRows(dataSource, k)).toHaveLength(1);
  });

  it('applies a class-level @Idempotent() to every route of the controller', async () => {
    const t = tag();
    await post('/class-level', { tag: t }).expect(400);
    const k = key();
    await post('/class-level', { tag: t }, { 'idempotency-key': k }).expect(201);
    await post('/class-level', { tag: t }, { 'idempotency-key': k }).expect(201);
    expect(await effects(dataSource, t)).toEqual(['class-level']);
  });

  it('commits the write of a returned redirect (303) and replays it', async () => {
    const k = key();
    const t = tag();
    const first = await post('/redirect', { tag: t }, { 'idempotency-key': k }).expect(303);
    const again = await post('/redirect', { tag: t }, { 'idempotency-key': k }).expect(303);
    expect(again.headers.location).toBe(first.headers.location);
    expect(await effects(dataSource, t)).toEqual(['redirect']);
    expect(await keyRows(dataSource, k)).toEqual([
      expect.objectContaining({ status: 'completed', response_code: 303 }),
    ]);
  });

  it('gives the handler the usual lock_timeout, not the claim’s', async () => {
    const res = await post('/lock-timeout', { tag: tag() }, { 'idempotency-key': key() }).expect(
      201,
    );
    expect(res.body).toEqual({ lockTimeout: '0' });
  });

  it.each([
    [
      'JSON text JavaScript numbers cannot hold',
      '/json-text',
      /^\{"id":\d+,"big":12345678901234567890,"amount":1\.50\}$/,
    ],
    ['text under a JSON content type that is no JSON', '/json-text?invalid=1', /^not json \{\d+$/],
  ])(
    'sends %s exactly as the handler returned it, first and on the replay',
    async (_label, path, exact) => {
      const k = key();
      const t = tag();
      // Read as text: the client must not try to parse what is no JSON.
      const send = () =>
        post(path, { tag: t }, { 'idempotency-key': k })
          .buffer(true)
          .parse((res, done) => {
            let text = '';
            res.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
            res.on('end', () => done(null, text));
          })
          .expect(201);
      const first = await send();
      const again = await send();
      expect(first.body).toMatch(exact); // the text, as the parser above read it
      expect(again.body).toBe(first.body);
      expect(first.headers['content-type']).toMatch(/^application\/json/);
      expect(await effects(dataSource, t)).toEqual(['json-text']);
    },
  );

  it('keeps a content type the handler set, on the first answer and on the replay', async () => {
    const k = key();
    const t = tag();
    const first = await post('/vendor-json', { tag: t }, { 'idempotency-key': k }).expect(201);
    const again = await post('/vendor-json', { tag: t }, { 'idempotency-key': k }).expect(201);
    expect(again.text).toBe(first.text);
    expect(first.headers['content-type']).toMatch(/^application\/vnd\.api\+json/);
    expect(again.headers['content-type']).toBe(first.headers['content-type']);
  });

  it('keeps a default that changes on every creation out of the fingerprint: an honest retry replays', async () => {
    const k = key();
    const t = tag();
    const first = await post('/widgets', { tag: t }, { 'idempotency-key': k }).expect(201);
    const again = await post('/widgets', { tag: t }, { 'idempotency-key': k }).expect(201);
    expect(again.text).toBe(first.text);
    expect(await effects(dataSource, t)).toEqual(['widgets']);
  });

  it('lets safe methods through a class-level @Idempotent() without a key', async () => {
    await request(app.getHttpServer()).get('/class-level').expect(200);
  });

  it('leaves undecorated routes alone', async () => {
    await request(app.getHttpServer()).get('/plain').set('idempotency-key', '').expect(200);
  });
});

@Module({
  providers: [{ provide: 'TENANT_HEADER', useValue: 'x-test-tenant' }],
  exports: ['TENANT_HEADER'],
})
class TestConfigModule {}

describe('a tenant resolver and an onReplay hook that return promises', () => {
  let app: INestApplication;
  let dataSource: DataSource;
  // Thenables of another kind than the native Promise, as a promise library would return.
  const later = <T>(value: () => T): PromiseLike<T> => ({
    then: (resolve, reject) =>
      new Promise<T>((done) => setTimeout(() => done(value()), 5)).then(resolve, reject),
  });
  beforeAll(async () => {
    ({ app, dataSource } = await createLibraryApp(
      IdempotencyModule.forRoot({
        tenantResolver: (context: ExecutionContext) =>
          later(
            () => context.switchToHttp().getRequest().headers['x-test-tenant'] as string,
          ) as Promise<string>,
        onReplay: (replay) => later(() => replay.setHeader('x-hooked', 'late')) as Promise<void>,
      }),
    ));
  });
  afterAll(() => app.close());

  it('waits for both: the key belongs to the resolved tenant, and the replay carries the late header', async () => {
    const k = key();
    const t = tag();
    const send = (tenant: string) =>
      request(app.getHttpServer())
        .post('/widgets')
        .set({ 'idempotency-key': k, 'x-test-tenant': tenant })
        .send({ tag: t });
    const first = await send('tenant-late').expect(201);
    const replay = await send('tenant-late').expect(201);
    const otherTenant = await send('tenant-other').expect(201);
    expect(first.headers['x-hooked']).toBeUndefined();
    expect(replay.headers['x-hooked']).toBe('late');
    expect(replay.text).toBe(first.text);
    // Another tenant's same key is another key: its handler ran, with an effect of its own.
    expect(otherTenant.body.id).not.toBe(first.body.id);
    expect(
      (await keyRows(dataSource, k)).map((r: { tenant_id: string }) => r.tenant_id).sort(),
    ).toEqual(['tenant-late', 'tenant-other']);
  });
});

describe('an onReplay hook that changes the response it is given', () => {
  let app: INestApplication;
  beforeAll(async () => {
    ({ app } = await createLibraryApp(
      IdempotencyModule.forRoot({
        // Misuse: headers go through setHeader. The replay cache (on) must not keep the edit.
        onReplay: (replay) => {
          (replay.response.headers as Record<string, string>)['x-edited'] = 'by the hook';
          replay.response.body.fill(0x20);
        },
      }),
    ));
  });
  afterAll(() => app.close());

  it('changes neither that replay nor the ones after it', async () => {
    const k = key();
    const t = tag();
    const send = () =>
      request(app.getHttpServer()).post('/widgets').set('idempotency-key', k).send({ tag: t });
    const first = await send().expect(201);
    for (let replay = 0; replay < 3; replay++) {
      const res = await send().expect(201);
      expect(res.text).toBe(first.text);
      expect(res.headers['x-edited']).toBeUndefined();
    }
  });
});

describe('IdempotencyModule.forRootAsync with every option set', () => {
  let app: INestApplication;
  let dataSource: DataSource;
  beforeAll(async () => {
    ({ app, dataSource } = await createLibraryApp(
      IdempotencyModule.forRootAsync({
        imports: [TestConfigModule],
        inject: ['TENANT_HEADER'],
        useFactory: (tenantHeader: string) => ({
          headerName: 'X-Request-Key',
          maxKeyLength: 40,
          retryAfterSeconds: 7,
          ttlSeconds: 3600,
          // A test stand-in for an authenticated tenant; never trust a raw header in production.
          tenantResolver: (context: ExecutionContext) =>
            context.switchToHttp().getRequest().headers[tenantHeader],
          markReplays: true,
          onReplay: (replay) => replay.setHeader('x-replayed-key', replay.keyHash),
          storedHeaders: ['x-custom'],
          fingerprintHeaders: ['x-currency'],
        }),
      }),
    ));
  });
  afterAll(() => app.close());

  const post = (body: object, headers: Record<string, string>) =>
    request(app.getHttpServer()).post('/widgets').set(headers).send(body);

  it('reads the configured header, marks replays and lets the hook decorate them', async () => {
    const k = key();
    const t = tag();
    const first = await post(
      { tag: t },
      { 'x-request-key': k, 'x-test-tenant': 'tenant-a' },
    ).expect(201);
    const replay = await post(
      { tag: t },
      { 'x-request-key': k, 'x-test-tenant': 'tenant-a' },
    ).expect(201);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.headers['x-replayed-key']).toMatch(/^[0-9a-f]{12}$/);
    expect(replay.text).toBe(first.text);
    expect(await keyRows(dataSource, k)).toEqual([
      expect.objectContaining({ tenant_id: 'tenant-a', ttl: 3600 }),
    ]);
  });

  it('stores and replays the allowlisted response headers, and only those', async () => {
    const k = key();
    const t = tag();
    const headers = { 'x-request-key': k, 'x-test-tenant': 'tenant-a' };
    const first = await request(app.getHttpServer())
      .post('/headers')
      .set(headers)
      .send({ tag: t })
      .expect(201);
    const replay = await request(app.getHttpServer())
      .post('/headers')
      .set(headers)
      .send({ tag: t })
      .expect(201);
    expect(first.headers['x-custom']).toBe(`custom-${first.body.id}`);
    expect(first.headers['x-not-stored']).toBe(`volatile-${first.body.id}`);
    expect(replay.headers['x-custom']).toBe(first.headers['x-custom']);
    expect(replay.headers['x-not-stored']).toBeUndefined();
    const [row] = await dataSource.query(
      'SELECT response_headers FROM idempotency_keys WHERE idem_key = $1',
      [k],
    );
    expect(Object.keys(row.response_headers).sort()).toEqual(['content-type', 'x-custom']);
    expect(await effects(dataSource, t)).toEqual(['headers']);
  });

  it('requires the configured header and enforces the configured length', async () => {
    const t = tag();
    const missing = await post({ tag: t }, { 'idempotency-key': key() });
    expect(missing.status).toBe(400);
    expect(missing.body.detail).toContain('X-Request-Key');
    await post({ tag: t }, { 'x-request-key': 'k'.repeat(41) }).expect(400);
    expect(await effects(dataSource, t)).toEqual([]);
  });

  it('scopes by the resolved tenant and puts configured headers in the fingerprint', async () => {
    const k = key();
    const t = tag();
    await post(
      { tag: t },
      { 'x-request-key': k, 'x-test-tenant': 'tenant-a', 'x-currency': 'usd' },
    ).expect(201);
    await post(
      { tag: t },
      { 'x-request-key': k, 'x-test-tenant': 'tenant-b', 'x-currency': 'usd' },
    ).expect(201);
    await post(
      { tag: t },
      { 'x-request-key': k, 'x-test-tenant': 'tenant-a', 'x-currency': 'eur' },
    ).expect(422);
    expect(await effects(dataSource, t)).toEqual(['widgets', 'widgets']);
  });
});

/** A response-wrapping interceptor, as many apps register globally. */
class WrapInterceptor implements NestInterceptor {
  intercept(_context: ExecutionContext, next: CallHandler) {
    return next.handle().pipe(map((data) => ({ data })));
  }
}

describe('IdempotencyModule under global interceptors (ClassSerializerInterceptor, a wrapper)', () => {
  let app: INestApplication;
  let dataSource: DataSource;
  beforeAll(async () => {
    ({ app, dataSource } = await createLibraryApp(IdempotencyModule.forRoot({}), (nest) =>
      nest.useGlobalInterceptors(
        new WrapInterceptor(),
        new ClassSerializerInterceptor(nest.get(Reflector)),
      ),
    ));
  });
  afterAll(() => app.close());

  it('never stores nor sends an @Exclude()d field, and outer interceptors see a value, first time and on replay', async () => {
    const k = key();
    const t = tag();
    const post = () =>
      request(app.getHttpServer()).post('/account').set('idempotency-key', k).send({ tag: t });
    const first = await post().expect(201);
    const replay = await post().expect(201);

    expect(first.body).toEqual({ data: { id: expect.any(Number), email: `${t}@example.com` } });
    expect(replay.text).toBe(first.text);
    expect(first.text).not.toContain('SECRET');
    const [row] = await dataSource.query(
      'SELECT response_body FROM idempotency_keys WHERE idem_key = $1',
      [k],
    );
    expect(row.response_body.toString('utf8')).not.toContain('SECRET');
    expect(await effects(dataSource, t)).toEqual(['account']);
  });

  it("applies the route's @SerializeOptions() to what it stores and sends, first time and on replay", async () => {
    const k = key();
    const t = tag();
    const post = () =>
      request(app.getHttpServer())
        .post('/account-serialized')
        .set('idempotency-key', k)
        .send({ tag: t });
    const first = await post().expect(201);
    const replay = await post().expect(201);

    expect(first.body).toEqual({ data: { id: expect.any(Number) } });
    expect(replay.text).toBe(first.text);
    const [row] = await dataSource.query(
      'SELECT response_body FROM idempotency_keys WHERE idem_key = $1',
      [k],
    );
    expect(row.response_body.toString('utf8')).not.toContain('@example.com');
    expect(await effects(dataSource, t)).toEqual(['account-serialized']);
  });
});

describe("IdempotencyModule under a ClassSerializerInterceptor built with options of the app's", () => {
  let app: INestApplication;
  let dataSource: DataSource;
  beforeAll(async () => {
    ({ app, dataSource } = await createLibraryApp(IdempotencyModule.forRoot({}), (nest) =>
      nest.useGlobalInterceptors(
        new ClassSerializerInterceptor(nest.get(Reflector), { excludePrefixes: ['email'] }),
      ),
    ));
  });
  afterAll(() => app.close());

  const storedBody = async (k: string) => {
    const [row] = await dataSource.query<{ response_body: Buffer }[]>(
      'SELECT response_body FROM idempotency_keys WHERE idem_key = $1',
      [k],
    );
    return row.response_body.toString('utf8');
  };

  it.each([
    ['its defaults', '/account', { id: expect.any(Number) as unknown }],
    [
      'its defaults under the route’s @SerializeOptions({ type })',
      '/account-plain',
      { id: expect.any(Number) as unknown },
    ],
  ])(
    'serialises with %s what it stores and sends, first time and on replay',
    async (_, path, expected) => {
      const k = key();
      const t = tag();
      const post = () =>
        request(app.getHttpServer()).post(path).set('idempotency-key', k).send({ tag: t });
      const first = await post().expect(201);
      const replay = await post().expect(201);

      expect(first.body).toEqual(expected);
      expect(replay.text).toBe(first.text);
      expect(await storedBody(k)).toBe(first.text);
      expect(await effects(dataSource, t)).toEqual([path.slice(1)]);
    },
  );
});

/** Reads a response as text, without JSON.parse: the test counts the server's parses. */
function asText(response: request.Response, callback: (error: Error | null, body: string) => void) {
  // At run time superagent hands a parser the raw response stream.
  const stream = response as unknown as NodeJS.ReadableStream;
  let text = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => (text += chunk));
  stream.on('end', () => callback(null, text));
}

/** How each set-up of the suite below configures its app beyond the library's defaults. */
type AppSetUp = (nest: INestApplication) => void;
const asIs: AppSetUp = () => undefined;
const jsonSpaces: AppSetUp = (nest) => nest.getHttpAdapter().getInstance().set('json spaces', 2);
/** Middleware that wraps `res.json` on each response, as response validators and loggers do. */
const wrappedJson: AppSetUp = (nest) =>
  nest.use(
    (
      _request: unknown,
      response: { json(body: unknown): unknown; setHeader(name: string, value: string): void },
      next: () => void,
    ) => {
      const json = response.json.bind(response);
      response.json = (body: unknown) => {
        response.setHeader('x-json-wrapper-saw', typeof body);
        return json(body);
      };
      next();
    },
  );

describe.each([
  ['nestjs-cls registers plugins only', { pluginOnly: true }, asIs, 0],
  ["nestjs-cls's ClsInterceptor is mounted", { mountClsInterceptor: true }, asIs, 0],
  ['Express has `json spaces` set', { pluginOnly: true }, jsonSpaces, 1],
  ['middleware replaced `res.json` on the response', { pluginOnly: true }, wrappedJson, 1],
  ["ClsModule.forRoot's idle global interceptor runs in front", {}, asIs, 1],
])(
  'IdempotencyModule, the first interceptor of a route, when %s',
  (_when, infrastructure, setUp, parses) => {
    const spaces = setUp === jsonSpaces ? 2 : undefined;
    let app: INestApplication;
    let dataSource: DataSource;
    beforeAll(async () => {
      ({ app, dataSource } = await createLibraryApp(
        IdempotencyModule.forRoot({}),
        setUp,
        infrastructure,
      ));
    });
    afterAll(() => app.close());

    it(`sends the same bytes first time and on replay, the stored JSON parsed ${parses} time(s) per replay`, async () => {
      const k = key();
      const t = tag();
      const post = () =>
        request(app.getHttpServer())
          .post('/widgets')
          .set('idempotency-key', k)
          .send({ tag: t, size: 3 })
          .buffer(true)
          .parse(asText);
      const first = await post().expect(201);
      const [row] = await dataSource.query(
        'SELECT response_body FROM idempotency_keys WHERE idem_key = $1',
        [k],
      );
      const stored: string = row.response_body.toString('utf8');
      const parse = jest.spyOn(JSON, 'parse');
      try {
        const replays = [await post().expect(201), await post().expect(201)];
        const parsesOfStored = parse.mock.calls.filter(([text]) => text === stored).length;
        expect(parsesOfStored).toBe(parses * replays.length);
        for (const replay of replays) {
          expect(replay.body).toBe(first.body);
          expect(replay.headers['content-type']).toBe(first.headers['content-type']);
          expect(replay.headers.etag).toBe(first.headers.etag);
          // The wrapper still sees a value, on the first answer and on every replay.
          expect(replay.headers['x-json-wrapper-saw']).toBe(
            setUp === wrappedJson ? 'object' : undefined,
          );
        }
      } finally {
        parse.mockRestore();
      }
      expect(first.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(first.body).toBe(
        spaces === undefined ? stored : JSON.stringify(JSON.parse(stored), null, spaces),
      );
      expect(await effects(dataSource, t)).toEqual(['widgets']);
    });
  },
);

const failingHooks: [string, () => void | Promise<void>][] = [
  [
    'throws',
    () => {
      throw new Error('a hook that fails');
    },
  ],
  ['returns a rejected promise', () => Promise.reject(new Error('a hook that fails later'))],
];

describe.each(failingHooks)(
  'IdempotencyModule events when an onReplay hook %s',
  (_how, onReplay) => {
    let app: INestApplication;
    let dataSource: DataSource;
    const events: IdempotencyEvent[] = [];
    beforeAll(async () => {
      ({ app, dataSource } = await createLibraryApp(
        IdempotencyModule.forRoot({
          onEvent: (event) => events.push(event),
          onReplay,
        }),
      ));
    });
    afterAll(() => app.close());

    it('reports the replay once, never a second time as released, and runs no handler', async () => {
      const k = key();
      const body = { tag: tag() };
      await request(app.getHttpServer())
        .post('/widgets')
        .set('idempotency-key', k)
        .send(body)
        .expect(201);
      events.length = 0;
      await request(app.getHttpServer())
        .post('/widgets')
        .set('idempotency-key', k)
        .send(body)
        .expect(500);
      expect(events.map((event) => event.type)).toEqual(['replayed']);
      expect(await effects(dataSource, body.tag)).toEqual(['widgets']);
    });
  },
);
