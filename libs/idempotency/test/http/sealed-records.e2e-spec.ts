import {
  Body,
  type CallHandler,
  Controller,
  Headers,
  type INestApplication,
  Post,
  ServiceUnavailableException,
} from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { from, lastValueFrom } from 'rxjs';
import { randomBytes, randomUUID } from 'node:crypto';
import {
  type IdempotencyEncryptionOptions,
  type IdempotencyEvent,
  IdempotencyModule,
  type IdempotencyModuleOptions,
  IdempotencyProblemType,
  Idempotent,
  type IdempotentPhases,
  Phases,
} from 'nestjs-pg-idempotency';
import { IsString } from 'class-validator';
import request from 'supertest';
import type { DataSource } from 'typeorm';
import { Effects, createLibraryApp } from './library-app';

class TagDto {
  @IsString()
  tag: string;
}

/** One recovery point whose result holds a secret, then (on request) a transient failure. */
@Controller('sealed-phased')
class SealedPhasedController {
  constructor(private readonly effects: Effects) {}

  @Post()
  @Idempotent({ phased: true })
  async create(
    @Body() body: TagDto,
    @Phases() phases: IdempotentPhases,
    @Headers('x-fail-after-step') failAfterStep?: string,
  ) {
    const created = await phases.transaction('created', async () => ({
      id: await this.effects.record('sealed-phased', body.tag),
      secret: `secret-of-${body.tag}`,
    }));
    if (failAfterStep) throw new ServiceUnavailableException('failed after the step');
    return { ...created, resumed: phases.resumed };
  }
}

const k1 = { id: 'k1', key: randomBytes(32) };
const k2 = { id: 'k2', key: randomBytes(32).toString('base64') };
const tag = () => `t-${randomUUID()}`;
const key = () => `k-${randomUUID()}`;

interface KeyRow {
  response_headers: Record<string, string> | null;
  response_body: Buffer | null;
  sealed_with: string | null;
  step_state: Record<string, string> | null;
  status: string;
}

async function keyRow(dataSource: DataSource, idemKey: string): Promise<KeyRow> {
  const [row] = await dataSource.query<KeyRow[]>(
    `SELECT status, response_headers, response_body, sealed_with, step_state
       FROM idempotency_keys WHERE idem_key = $1`,
    [idemKey],
  );
  return row;
}

async function effects(dataSource: DataSource, tagValue: string): Promise<number> {
  const rows: unknown[] = await dataSource.query(
    'SELECT 1 FROM library_test_effects WHERE tag = $1',
    [tagValue],
  );
  return rows.length;
}

/** The whole row as text, the body's bytes included: no plaintext may appear in it. */
async function rowText(dataSource: DataSource, idemKey: string): Promise<string> {
  const [row] = await dataSource.query<{ text: string }[]>(
    `SELECT row_to_json(k)::text || coalesce(encode(response_body, 'escape'), '') AS text
       FROM idempotency_keys k WHERE idem_key = $1`,
    [idemKey],
  );
  return row.text;
}

describe('sealed records (option encryption) on the real PostgreSQL', () => {
  const events: IdempotencyEvent[] = [];
  const apps: INestApplication[] = [];
  let sealing: INestApplication; // k1 seals
  let rotated: INestApplication; // k2 seals, k1 still opens
  let retired: INestApplication; // k2 only
  let plain: INestApplication; // no encryption
  let strict: INestApplication; // k1, unsealedRows: 'refuse'
  let dataSource: DataSource;

  const start = async (
    encryption?: IdempotencyEncryptionOptions,
    options: IdempotencyModuleOptions = {},
    configure: (app: INestApplication) => void = () => undefined,
  ) => {
    const { app, dataSource: appDataSource } = await createLibraryApp(
      IdempotencyModule.forRoot({
        // No replay cache: every replay below reads (and opens) the row.
        replayCache: false,
        storedHeaders: ['x-custom'],
        encryption,
        onEvent: (event) => events.push(event),
        ...options,
      }),
      configure,
      {},
      { controllers: [SealedPhasedController] },
    );
    apps.push(app);
    dataSource = appDataSource;
    return app;
  };

  beforeAll(async () => {
    sealing = await start({ keys: [k1] });
    rotated = await start({ keys: [k2, k1] });
    retired = await start({ keys: [k2] });
    plain = await start();
    strict = await start({ keys: [k1], unsealedRows: 'refuse' });
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
  });

  const post = (
    app: INestApplication,
    path: string,
    body: object,
    headers: Record<string, string>,
  ) => request(app.getHttpServer()).post(path).set(headers).send(body);

  const expectUnreadable = (response: request.Response, reason: string) => {
    expect(response.status).toBe(500);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(response.body).toMatchObject({
      type: IdempotencyProblemType.sealedRecordUnreadable,
      status: 500,
    });
    expect(events.at(-1)).toMatchObject({ type: 'unreadable_record', statusCode: 500, reason });
  };

  it('stores headers and body sealed, with the key id, and replays them byte for byte', async () => {
    const k = key();
    const t = tag();
    const first = await post(sealing, '/headers', { tag: t }, { 'idempotency-key': k });
    expect(first.status).toBe(201);
    const row = await keyRow(dataSource, k);
    expect(row).toMatchObject({ status: 'completed', sealed_with: 'k1', response_headers: null });
    const text = await rowText(dataSource, k);
    expect(text).not.toContain(`"id":${(first.body as { id: number }).id}`);
    expect(text).not.toContain(first.headers['x-custom']);
    expect(text).not.toContain('application/json');

    const replay = await post(sealing, '/headers', { tag: t }, { 'idempotency-key': k });
    expect(replay.status).toBe(201);
    expect(replay.text).toBe(first.text);
    expect(replay.headers['x-custom']).toBe(first.headers['x-custom']);
    expect(replay.headers['content-type']).toBe(first.headers['content-type']);
    expect(await effects(dataSource, t)).toBe(1);
  });

  it('seals on every path of the atomic mode: statements sent whole, and inside the app’s own transaction', async () => {
    const unprepared = await start({ keys: [k1] }, { preparedStatements: false });
    const joined = await start({ keys: [k1] }, {}, (app) => {
      const txHost = app.get<TransactionHost<TransactionalAdapterTypeOrm>>(TransactionHost);
      // The app's transaction around the request: the library joins it and records on its own.
      app.useGlobalInterceptors({
        intercept: (_context, next: CallHandler) =>
          from(
            txHost.withTransaction(() => lastValueFrom(next.handle(), { defaultValue: undefined })),
          ),
      });
    });
    for (const app of [unprepared, joined]) {
      const k = key();
      const t = tag();
      const first = await post(app, '/widgets', { tag: t }, { 'idempotency-key': k });
      expect(first.status).toBe(201);
      expect(await keyRow(dataSource, k)).toMatchObject({
        sealed_with: 'k1',
        response_headers: null,
      });
      expect(await rowText(dataSource, k)).not.toContain(t);
      const replay = await post(app, '/widgets', { tag: t }, { 'idempotency-key': k });
      expect(replay.text).toBe(first.text);
      expect(await effects(dataSource, t)).toBe(1);
    }
  });

  it('rotation: rows of the old key still replay, new rows carry the new key id', async () => {
    const old = key();
    const t = tag();
    const first = await post(sealing, '/widgets', { tag: t }, { 'idempotency-key': old });
    const replay = await post(rotated, '/widgets', { tag: t }, { 'idempotency-key': old });
    expect(replay.status).toBe(201);
    expect(replay.text).toBe(first.text);

    const fresh = key();
    await post(rotated, '/widgets', { tag: t }, { 'idempotency-key': fresh }).expect(201);
    expect((await keyRow(dataSource, fresh)).sealed_with).toBe('k2');
    expect((await keyRow(dataSource, old)).sealed_with).toBe('k1');
    expect(await effects(dataSource, t)).toBe(2);
  });

  it('fails closed once the old key is removed: a 500 problem, the handler not run again', async () => {
    const k = key();
    const t = tag();
    await post(sealing, '/widgets', { tag: t }, { 'idempotency-key': k }).expect(201);
    const retry = await post(retired, '/widgets', { tag: t }, { 'idempotency-key': k });
    expectUnreadable(retry, 'unknown_key');
    expect(await effects(dataSource, t)).toBe(1);
    // Encryption turned off altogether: the sealed row cannot be opened either.
    expectUnreadable(
      await post(plain, '/widgets', { tag: t }, { 'idempotency-key': k }),
      'unknown_key',
    );
    expect(await effects(dataSource, t)).toBe(1);
    // The row is untouched: listing the key again replays it.
    await post(rotated, '/widgets', { tag: t }, { 'idempotency-key': k }).expect(201);
    expect(await effects(dataSource, t)).toBe(1);
  });

  it("a row's sealed columns copied onto another key's row do not open there", async () => {
    const victim = key();
    const attacker = key();
    const victimTag = tag();
    const attackerTag = tag();
    await post(sealing, '/widgets', { tag: victimTag }, { 'idempotency-key': victim }).expect(201);
    await post(sealing, '/widgets', { tag: attackerTag }, { 'idempotency-key': attacker }).expect(
      201,
    );
    await dataSource.query(
      `UPDATE idempotency_keys AS a
          SET response_body = v.response_body, sealed_with = v.sealed_with
         FROM idempotency_keys AS v
        WHERE a.idem_key = $1 AND v.idem_key = $2`,
      [attacker, victim],
    );
    const replay = await post(
      sealing,
      '/widgets',
      { tag: attackerTag },
      { 'idempotency-key': attacker },
    );
    expectUnreadable(replay, 'authentication_failed');
    expect(await effects(dataSource, attackerTag)).toBe(1);
  });

  it('a status code edited in the row does not open: a stored 422 cannot become a 201', async () => {
    const k = key();
    const t = tag();
    const declined = await post(sealing, '/declined', { tag: t }, { 'idempotency-key': k });
    expect(declined.status).toBe(422);
    await dataSource.query(`UPDATE idempotency_keys SET response_code = 201 WHERE idem_key = $1`, [
      k,
    ]);
    const replay = await post(sealing, '/declined', { tag: t }, { 'idempotency-key': k });
    expectUnreadable(replay, 'authentication_failed');
    expect(await effects(dataSource, t)).toBe(0);
  });

  it('rows written before encryption was on replay as they are; unsealedRows: refuse fails them closed', async () => {
    const k = key();
    const t = tag();
    const first = await post(plain, '/widgets', { tag: t }, { 'idempotency-key': k });
    expect(await keyRow(dataSource, k)).toMatchObject({
      sealed_with: null,
      response_headers: { 'content-type': 'application/json; charset=utf-8' },
    });
    expect((await keyRow(dataSource, k)).response_body?.toString()).toBe(first.text);
    const replay = await post(sealing, '/widgets', { tag: t }, { 'idempotency-key': k });
    expect(replay.text).toBe(first.text);
    expectUnreadable(
      await post(strict, '/widgets', { tag: t }, { 'idempotency-key': k }),
      'unsealed_refused',
    );
    expect(await effects(dataSource, t)).toBe(1);
  });

  it('seals the phased steps’ results: a resumed attempt opens them, the step does not run again', async () => {
    const k = key();
    const t = tag();
    const failed = await post(
      sealing,
      '/sealed-phased',
      { tag: t },
      { 'idempotency-key': k, 'x-fail-after-step': '1' },
    );
    expect(failed.status).toBe(503);
    const inProgress = await keyRow(dataSource, k);
    expect(inProgress.status).toBe('in_progress');
    expect(inProgress.sealed_with).toBe('k1');
    expect(inProgress.step_state?.created).toMatch(/^sealed:/);
    expect(await rowText(dataSource, k)).not.toContain(`secret-of-${t}`);

    // Resumed under the rotated keyring: the step sealed with k1 opens, the response seals with k2.
    const resumed = await post(rotated, '/sealed-phased', { tag: t }, { 'idempotency-key': k });
    expect(resumed.status).toBe(201);
    expect(resumed.body).toMatchObject({ secret: `secret-of-${t}`, resumed: true });
    expect(await effects(dataSource, t)).toBe(1);
    const completed = await keyRow(dataSource, k);
    expect(completed).toMatchObject({ status: 'completed', sealed_with: 'k2' });
    expect(await rowText(dataSource, k)).not.toContain(`secret-of-${t}`);
    const replay = await post(rotated, '/sealed-phased', { tag: t }, { 'idempotency-key': k });
    expect(replay.text).toBe(resumed.text);
  });

  it('fails closed on a step result that cannot be opened, and ends the lease', async () => {
    const k = key();
    const t = tag();
    await post(
      sealing,
      '/sealed-phased',
      { tag: t },
      { 'idempotency-key': k, 'x-fail-after-step': '1' },
    ).expect(503);
    // Another key's step result copied in: bound to that key, it does not open here.
    const other = key();
    await post(
      sealing,
      '/sealed-phased',
      { tag: tag() },
      { 'idempotency-key': other, 'x-fail-after-step': '1' },
    ).expect(503);
    await dataSource.query(
      `UPDATE idempotency_keys AS a SET step_state = o.step_state
         FROM idempotency_keys AS o WHERE a.idem_key = $1 AND o.idem_key = $2`,
      [k, other],
    );
    const retry = await post(sealing, '/sealed-phased', { tag: t }, { 'idempotency-key': k });
    expectUnreadable(retry, 'authentication_failed');
    expect(await effects(dataSource, t)).toBe(1);
    // The lease ended at once: the next retry gets the same answer, not a 409.
    const again = await post(sealing, '/sealed-phased', { tag: t }, { 'idempotency-key': k });
    expectUnreadable(again, 'authentication_failed');
    expect(await effects(dataSource, t)).toBe(1);
  });
});

/** docs/sealed-records.md's (and the package README's) example, as written. */
describe('encryption from @nestjs/config, as docs/sealed-records.md shows it', () => {
  const names = ['IDEMPOTENCY_KEY_2026_12', 'IDEMPOTENCY_KEY_2026_06'];
  const previous = names.map((name) => process.env[name]);
  beforeAll(() => {
    for (const name of names) process.env[name] = randomBytes(32).toString('base64');
  });
  afterAll(() => {
    names.forEach((name, index) => {
      if (previous[index] === undefined) delete process.env[name];
      else process.env[name] = previous[index];
    });
  });

  it('seals with the first key listed', async () => {
    const { app, dataSource } = await createLibraryApp(
      IdempotencyModule.forRootAsync({
        imports: [ConfigModule],
        inject: [ConfigService],
        useFactory: (config: ConfigService) => ({
          encryption: {
            // The first key seals; every listed key opens. 32 bytes each, in base64.
            keys: [
              { id: '2026-12', key: config.getOrThrow<string>('IDEMPOTENCY_KEY_2026_12') },
              { id: '2026-06', key: config.getOrThrow<string>('IDEMPOTENCY_KEY_2026_06') },
            ],
          },
        }),
      }),
      undefined,
      {},
      {},
      [ConfigModule.forRoot({ ignoreEnvFile: true })],
    );
    try {
      const k = key();
      await request(app.getHttpServer())
        .post('/widgets')
        .set('idempotency-key', k)
        .send({ tag: tag() })
        .expect(201);
      expect((await keyRow(dataSource, k)).sealed_with).toBe('2026-12');
    } finally {
      await app.close();
    }
  });
});
