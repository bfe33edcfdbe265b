import {
  Body,
  Controller,
  Headers,
  type INestApplication,
  Injectable,
  Post,
  ServiceUnavailableException,
  ValidationPipe,
} from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { IsString } from 'class-validator';
import { randomUUID } from 'node:crypto';
import {
  Idempotent,
  IdempotencyModule,
  type IdempotentPhases,
  Phases,
} from 'nestjs-pg-idempotency';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { withAppTypeParsers } from '../support/app-type-parsers';
import { libraryInfrastructure } from '../support/library-infrastructure';
import { migrateTestDatabase } from '../support/migrations';
import { providerCharges, startChargeRecorder } from './charge-recorder';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let providerUrl = '';

class TagDto {
  @IsString()
  tag: string;
}

@Injectable()
class PhasedEffects {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  async record(tag: string): Promise<void> {
    await this.txHost.tx.query(`INSERT INTO phased_test_effects (tag) VALUES ($1)`, [tag]);
  }
}

@Controller('phased')
class PhasedTestController {
  constructor(private readonly effects: PhasedEffects) {}

  /** Two calls to one service in one request: two steps, two child keys. */
  @Post('two-calls')
  @Idempotent({ phased: true })
  async twoCalls(
    @Body() body: TagDto,
    @Phases() phases: IdempotentPhases,
    @Headers('x-fail-between') failBetween?: string,
  ) {
    const first = await phases.external('first-charge', () =>
      charge(phases, 'charge-first', `${body.tag}-first`),
    );
    if (failBetween) throw new ServiceUnavailableException('injected between the calls');
    const second = await phases.external('second-charge', () =>
      charge(phases, 'charge-second', `${body.tag}-second`),
    );
    return { first, second, resumed: phases.resumed };
  }

  /** A phase that can outlive its one-second lease. */
  @Post('slow-write')
  @Idempotent({ phased: true, leaseSeconds: 1 })
  async slowWrite(
    @Body() body: TagDto,
    @Phases() phases: IdempotentPhases,
    @Headers('x-sleep') sleepMs?: string,
  ) {
    const written = await phases.transaction('write', async () => {
      await this.effects.record(body.tag);
      if (sleepMs) await sleep(Number(sleepMs));
      return { by: sleepMs ? 'slow' : 'fast' };
    });
    return written;
  }
}

async function charge(phases: IdempotentPhases, step: string, reference: string): Promise<string> {
  const response = await phases.fetch(step, `${providerUrl}/charges`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ amountCents: 100, currency: 'usd', reference }),
  });
  if (response.status !== 201) throw new Error(`provider answered ${response.status}`);
  return ((await response.json()) as { id: string }).id;
}

describe('phased mode in a bare app', () => {
  let app: INestApplication;
  let provider: { url: string; close(): Promise<void> };
  let dataSource: DataSource;

  beforeAll(async () => {
    provider = await startChargeRecorder();
    providerUrl = provider.url;

    const moduleRef = await Test.createTestingModule({
      imports: [
        ...libraryInfrastructure(),
        // No replay cache: a test moves a row's expiry by SQL, which a cache would not see.
        IdempotencyModule.forRoot({ replayCache: false }),
      ],
      controllers: [PhasedTestController],
      providers: [PhasedEffects],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    app.useGlobalPipes(new ValidationPipe({ transform: true }));
    dataSource = app.get(DataSource);
    await migrateTestDatabase(dataSource); // phased_test_effects included
    await app.init();
  });
  afterAll(async () => {
    await app?.close();
    await provider?.close();
  });

  const post = (path: string, body: object, headers: Record<string, string>) =>
    request(app.getHttpServer()).post(path).set(headers).send(body);

  it('sends two different child keys for two calls to one service, the same ones on the retry', async () => {
    const key = `k-${randomUUID()}`;
    const tag = `t-${randomUUID()}`;
    const failed = await post(
      '/phased/two-calls',
      { tag },
      { 'idempotency-key': key, 'x-fail-between': '1' },
    );
    expect(failed.status).toBe(503);
    const [first] = await providerCharges(providerUrl, `${tag}-first`);
    expect(first).toBeDefined();

    // The transient failure released the lease: the retry resumes at once, after 'first-charge'.
    const retried = await post('/phased/two-calls', { tag }, { 'idempotency-key': key });
    expect(retried.status).toBe(201);
    expect(retried.body).toEqual({
      first: first.id,
      second: expect.stringMatching(/^ch_/),
      resumed: true,
    });
    const firsts = await providerCharges(providerUrl, `${tag}-first`);
    const seconds = await providerCharges(providerUrl, `${tag}-second`);
    expect(firsts).toHaveLength(1);
    expect(seconds).toHaveLength(1);
    expect(firsts[0].idempotencyKey).not.toBe(seconds[0].idempotencyKey);
    expect([firsts[0].idempotencyKey, seconds[0].idempotencyKey]).not.toContain(key);

    const replay = await post('/phased/two-calls', { tag }, { 'idempotency-key': key });
    expect(replay.text).toBe(retried.text);
    expect(await providerCharges(providerUrl, `${tag}-second`)).toHaveLength(1);
  });

  it("resumes from its recovery points whatever the app's own type parsers make of them", async () => {
    // An app may keep jsonb, arrays or integers as text: the library reads what the earlier
    // attempt committed, and how many rows its fenced writes changed, as text of its own, so
    // the retry still skips the first charge.
    const key = `k-${randomUUID()}`;
    const tag = `t-${randomUUID()}`;
    await post(
      '/phased/two-calls',
      { tag },
      { 'idempotency-key': key, 'x-fail-between': '1' },
    ).expect(503);
    const [first] = await providerCharges(providerUrl, `${tag}-first`);
    const retried = await withAppTypeParsers(() =>
      post('/phased/two-calls', { tag }, { 'idempotency-key': key }).then((r) => r),
    );
    expect(retried.status).toBe(201);
    expect(retried.body).toEqual({
      first: first.id,
      second: expect.stringMatching(/^ch_/),
      resumed: true,
    });
    expect(await providerCharges(providerUrl, `${tag}-first`)).toHaveLength(1);
    expect(await providerCharges(providerUrl, `${tag}-second`)).toHaveLength(1);
  });

  it('fences a slow attempt that lost its lease: its writes roll back, the new owner’s commit', async () => {
    const key = `k-${randomUUID()}`;
    const tag = `t-${randomUUID()}`;
    // .then() sends it now (supertest is lazy).
    const slow = post(
      '/phased/slow-write',
      { tag },
      { 'idempotency-key': key, 'x-sleep': '3000' },
    ).then((r) => r);
    // Once the slow attempt holds the key, its lease runs out (as a one-second lease would).
    for (let i = 0; i < 100; i++) {
      const [row] = await dataSource.query('SELECT 1 FROM idempotency_keys WHERE idem_key = $1', [
        key,
      ]);
      if (row) break;
      await sleep(20);
    }
    await dataSource.query('UPDATE idempotency_keys SET locked_until = now() WHERE idem_key = $1', [
      key,
    ]);
    const takeover = await post('/phased/slow-write', { tag }, { 'idempotency-key': key });
    expect(takeover.status).toBe(201);
    expect(takeover.body).toEqual({ by: 'fast' });

    const zombie = await slow;
    expect(zombie.status).toBe(409);
    const rows = await dataSource.query('SELECT tag FROM phased_test_effects WHERE tag = $1', [
      tag,
    ]);
    expect(rows).toHaveLength(1);
    const [keyRow] = await dataSource.query(
      'SELECT status, step_state FROM idempotency_keys WHERE idem_key = $1',
      [key],
    );
    expect(keyRow).toEqual({ status: 'completed', step_state: { write: '{"by":"fast"}' } });
  });

  it('keeps the recovery points of a key in progress past its time to live; a new claim after completion gets new child keys', async () => {
    const key = `k-${randomUUID()}`;
    const tag = `t-${randomUUID()}`;
    const expire = () =>
      dataSource.query(
        `UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE idem_key = $1`,
        [key],
      );
    await post(
      '/phased/two-calls',
      { tag },
      { 'idempotency-key': key, 'x-fail-between': '1' },
    ).expect(503);
    await expire();

    // In progress: the retry resumes, the first charge is not made again.
    const resumed = await post('/phased/two-calls', { tag }, { 'idempotency-key': key }).expect(
      201,
    );
    expect(resumed.body.resumed).toBe(true);
    expect(await providerCharges(providerUrl, `${tag}-first`)).toHaveLength(1);

    // Completed and expired: the key names a new operation, which the provider must not
    // deduplicate into the old one.
    await expire();
    const fresh = await post('/phased/two-calls', { tag }, { 'idempotency-key': key }).expect(201);
    expect(fresh.body.resumed).toBe(false);
    expect(fresh.body.first).not.toBe(resumed.body.first);
    const firsts = await providerCharges(providerUrl, `${tag}-first`);
    expect(firsts).toHaveLength(2);
    expect(firsts[0].idempotencyKey).not.toBe(firsts[1].idempotencyKey);
  });

  it('requires a key on a phased route', async () => {
    const tag = `t-${randomUUID()}`;
    await post('/phased/slow-write', { tag }, {}).expect(400);
    expect(
      await dataSource.query('SELECT 1 FROM phased_test_effects WHERE tag = $1', [tag]),
    ).toHaveLength(0);
  });
});
