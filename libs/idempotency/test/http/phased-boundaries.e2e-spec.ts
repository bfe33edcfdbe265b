import {
  Body,
  Controller,
  GatewayTimeoutException,
  Headers,
  type INestApplication,
  Injectable,
  Post,
  ValidationPipe,
} from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { IsString } from 'class-validator';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  Idempotent,
  IdempotencyModule,
  type IdempotencyModuleOptions,
  type IdempotentPhases,
  Phases,
} from 'nestjs-pg-idempotency';
import request from 'supertest';
import { DataSource } from 'typeorm';
import {
  type InfrastructureOptions,
  libraryInfrastructure,
} from '../support/library-infrastructure';
import { migrateTestDatabase } from '../support/migrations';
import { TransactionPerRequest } from '../support/transaction-per-request';
import { providerCharges, startChargeRecorder } from './charge-recorder';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
let providerUrl = '';

class ReferenceDto {
  @IsString()
  reference: string;
}

interface ProcessedCharge {
  id: string;
  reference: string;
}

const PROCESSOR_SETTLES_SECONDS = 2;

/**
 * A processor that ignores idempotency keys and carries out its first charge `firstChargeMs`
 * after the request, whether or not its client is still waiting.
 */
async function startSlowProcessor(firstChargeMs: number) {
  const charges: ProcessedCharge[] = [];
  let posts = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const { reference } = JSON.parse(Buffer.concat(chunks).toString()) as ProcessedCharge;
      setTimeout(
        () => {
          const charged = { id: `ch_${randomUUID()}`, reference };
          charges.push(charged);
          if (!res.destroyed) {
            res.writeHead(201, { 'content-type': 'application/json' });
            res.end(JSON.stringify(charged));
          }
        },
        posts++ === 0 ? firstChargeMs : 0,
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    charges,
    find: (reference: string) => charges.find((charged) => charged.reference === reference),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

let slowProcessor: Awaited<ReturnType<typeof startSlowProcessor>>;

/** The slow processor's client: a charge we stop waiting for after 200 ms, and a lookup. */
@Injectable()
class SlowProcessorClient {
  async charge(phases: IdempotentPhases, reference: string): Promise<ProcessedCharge> {
    const res = await phases.fetch('charge-card', `${slowProcessor.url}/charges`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ reference }),
      timeoutMs: 200,
    });
    return (await res.json()) as ProcessedCharge;
  }

  findCharge(reference: string): Promise<ProcessedCharge | undefined> {
    return Promise.resolve(slowProcessor.find(reference));
  }
}

/** One charge at the recorder, which deduplicates by `Idempotency-Key` (no key: a 400). */
async function charge(phases: IdempotentPhases, reference: string): Promise<string> {
  const res = await phases.fetch('charge-card', `${providerUrl}/charges`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ amountCents: 100, currency: 'usd', reference }),
  });
  if (res.status !== 201) throw new Error(`the provider answered ${res.status}`);
  return ((await res.json()) as { id: string }).id;
}

@Controller('boundaries')
class BoundariesController {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly processor: SlowProcessorClient,
  ) {}

  @Post('charge')
  @Idempotent({ phased: true })
  async charge(
    @Body() body: ReferenceDto,
    @Phases() phases: IdempotentPhases,
    @Headers('x-lose-answer') loseAnswer?: string,
  ) {
    const id = await phases.external('charge', async () => {
      const charged = await charge(phases, body.reference);
      // The provider charged, its answer is lost: the step is uncertain.
      if (loseAnswer) throw new GatewayTimeoutException('the answer was lost');
      return charged;
    });
    return { charge: id, resumed: phases.resumed };
  }

  /** An external step called from inside the handler's own transaction. */
  @Post('charge-in-own-transaction')
  @Idempotent({ phased: true })
  chargeInOwnTransaction(@Body() body: ReferenceDto, @Phases() phases: IdempotentPhases) {
    return this.txHost.withTransaction(() =>
      phases.external('charge', () => charge(phases, body.reference)),
    );
  }

  // The package README's example (a call that may still land after a timeout), as written there.
  @Post('charge-slow-processor')
  @Idempotent({ phased: true })
  chargeSlowProcessor(@Body() dto: ReferenceDto, @Phases() phases: IdempotentPhases) {
    return phases.external('charge', () => this.processor.charge(phases, dto.reference), {
      reconcile: () => this.processor.findCharge(dto.reference),
      // The processor may still carry out a charge this long after our call timed out.
      inFlightSeconds: PROCESSOR_SETTLES_SECONDS,
    });
  }

  /** A phase longer than its lease of 1 s, then a pause before the answer. */
  @Post('long-step-then-pause')
  @Idempotent({ phased: true, leaseSeconds: 1 })
  async longStepThenPause(@Phases() phases: IdempotentPhases) {
    await phases.transaction('long', async () => {
      await sleep(1500);
      return 'done';
    });
    await sleep(600);
    return { done: true };
  }

  /** A phase that takes `x-sleep` ms after its write: a lease of 1 s runs out meanwhile. */
  @Post('slow-write')
  @Idempotent({ phased: true, leaseSeconds: 1 })
  slowWrite(
    @Body() body: ReferenceDto,
    @Phases() phases: IdempotentPhases,
    @Headers('x-sleep') sleepMs?: string,
  ) {
    return phases.transaction('write', async () => {
      await this.txHost.tx.query(`INSERT INTO phased_test_effects (tag) VALUES ($1)`, [
        body.reference,
      ]);
      if (sleepMs) await sleep(Number(sleepMs));
      return { by: sleepMs ? 'slow' : 'fast' };
    });
  }
}

async function phasedApp(
  module: IdempotencyModuleOptions,
  infrastructure: InfrastructureOptions = {},
  transactionPerRequest = false,
): Promise<{ app: INestApplication; dataSource: DataSource }> {
  const moduleRef = await Test.createTestingModule({
    imports: [...libraryInfrastructure(infrastructure), IdempotencyModule.forRoot(module)],
    controllers: [BoundariesController],
    providers: [SlowProcessorClient],
  }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  app.useGlobalPipes(new ValidationPipe({ transform: true }));
  if (transactionPerRequest)
    app.useGlobalInterceptors(new TransactionPerRequest(app.get(TransactionHost)));
  const dataSource = app.get(DataSource);
  await migrateTestDatabase(dataSource);
  await app.init();
  return { app, dataSource };
}

const keyRow = async (dataSource: DataSource, key: string) =>
  (
    await dataSource.query(
      `SELECT status, started_steps, locked_until <= now() AS lease_over
         FROM idempotency_keys WHERE idem_key = $1`,
      [key],
    )
  )[0];

/**
 * Where phased mode meets what is around it: a transaction someone else opened (refused: its
 * commits before a call would wait for that transaction), the header its child keys go out in,
 * and the isolation level its fenced writes run under.
 */
describe('phased mode at its boundaries', () => {
  let provider: { url: string; close(): Promise<void> };

  beforeAll(async () => {
    provider = await startChargeRecorder();
    providerUrl = provider.url;
    slowProcessor = await startSlowProcessor(1000);
  });
  afterAll(async () => {
    await provider.close();
    await slowProcessor.close();
  });

  describe("inside the app's own transaction", () => {
    let app: INestApplication;
    let dataSource: DataSource;
    beforeAll(async () => {
      ({ app, dataSource } = await phasedApp({ replayCache: false }, {}, true));
    });
    afterAll(() => app.close());

    it('refuses to run: its claim would not commit before the call, and a rollback would take it back', async () => {
      const key = randomUUID();
      const reference = `outer-${key}`;
      const res = await request(app.getHttpServer())
        .post('/boundaries/charge')
        .set('idempotency-key', key)
        .send({ reference });
      expect(res.status).toBe(500);
      expect(await providerCharges(providerUrl, reference)).toEqual([]);
      expect(await keyRow(dataSource, key)).toBeUndefined();
    });
  });

  describe('in an app without a transaction of its own', () => {
    let app: INestApplication;
    let dataSource: DataSource;
    beforeAll(async () => {
      ({ app, dataSource } = await phasedApp({ replayCache: false }));
    });
    afterAll(() => app.close());

    it("refuses an external step inside the handler's own transaction, before the call", async () => {
      const key = randomUUID();
      const reference = `inner-${key}`;
      const res = await request(app.getHttpServer())
        .post('/boundaries/charge-in-own-transaction')
        .set('idempotency-key', key)
        .send({ reference });
      expect(res.status).toBe(500);
      expect(await providerCharges(providerUrl, reference)).toEqual([]);
      // Claimed, no step started, the lease ended by the failure: a retry may go at once.
      expect(await keyRow(dataSource, key)).toEqual({
        status: 'in_progress',
        started_steps: null,
        lease_over: true,
      });
    });
  });

  describe('a step longer than its lease', () => {
    let app: INestApplication;
    let dataSource: DataSource;
    beforeAll(async () => {
      ({ app, dataSource } = await phasedApp({ replayCache: false }));
    });
    afterAll(() => app.close());

    it('renews the lease from its commit, not from its start: a retry right after it gets 409', async () => {
      const key = randomUUID();
      const post = () =>
        request(app.getHttpServer())
          .post('/boundaries/long-step-then-pause')
          .set('idempotency-key', key)
          .send({});
      const first = post().then((res) => res);
      for (let tries = 0; tries < 200; tries++) {
        const [row] = await dataSource.query<{ recovery_point: string | null }[]>(
          `SELECT recovery_point FROM idempotency_keys WHERE idem_key = $1`,
          [key],
        );
        if (row?.recovery_point === 'long') break;
        await sleep(10);
      }
      expect((await post()).status).toBe(409);
      expect((await first).status).toBe(201);
    });
  });

  describe('a step whose call may still land after a timeout (inFlightSeconds)', () => {
    let app: INestApplication;
    let dataSource: DataSource;
    beforeAll(async () => {
      ({ app, dataSource } = await phasedApp({ replayCache: false }));
    });
    afterAll(() => app.close());

    it('keeps the lease that long: a retry reconciles only once the call could land, one charge', async () => {
      const key = randomUUID();
      const reference = `in-flight-${key}`;
      const post = () =>
        request(app.getHttpServer())
          .post('/boundaries/charge-slow-processor')
          .set('idempotency-key', key)
          .send({ reference });
      expect((await post()).status).toBe(500); // the timeout: the charge is still on its way
      const failed = performance.now();
      expect(await keyRow(dataSource, key)).toMatchObject({ lease_over: false });
      // At once, as a client retries: the lease holds, so nothing reconciles too early.
      const early = await post();
      expect(early.status).toBe(409);
      expect(Number(early.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(Number(early.headers['retry-after'])).toBeLessThanOrEqual(PROCESSOR_SETTLES_SECONDS);
      await sleep(PROCESSOR_SETTLES_SECONDS * 1000 - (performance.now() - failed) + 200);
      const late = await post();
      expect(late.status).toBe(201);
      const charges = slowProcessor.charges.filter((charged) => charged.reference === reference);
      expect(charges).toHaveLength(1);
      expect(late.body).toEqual(charges[0]);
    });
  });

  describe('with a headerName of its own', () => {
    let app: INestApplication;
    beforeAll(async () => {
      ({ app } = await phasedApp({ replayCache: false, headerName: 'X-Request-Key' }));
    });
    afterAll(() => app.close());

    it('sends child keys downstream as Idempotency-Key: an uncertain step retried charges once', async () => {
      const key = randomUUID();
      const reference = `header-${key}`;
      const post = (headers: Record<string, string> = {}) =>
        request(app.getHttpServer())
          .post('/boundaries/charge')
          .set({ 'x-request-key': key, ...headers })
          .send({ reference });
      expect((await post({ 'x-lose-answer': '1' })).status).toBe(504);
      const retried = await post();
      expect(retried.status).toBe(201);
      const charges = await providerCharges(providerUrl, reference);
      expect(charges).toHaveLength(1);
      expect(charges[0].idempotencyKey).toMatch(/^[0-9a-f]{64}$/);
      expect(retried.body.charge).toBe(charges[0].id);
    });
  });

  describe('under REPEATABLE READ', () => {
    let app: INestApplication;
    let dataSource: DataSource;
    beforeAll(async () => {
      ({ app, dataSource } = await phasedApp(
        { replayCache: false },
        { defaultTxOptions: { isolationLevel: 'REPEATABLE READ' } },
      ));
    });
    afterAll(() => app.close());

    it('answers 409 to an attempt whose lease was taken over, as under READ COMMITTED', async () => {
      const key = randomUUID();
      const reference = `rr-${key}`;
      const post = (headers: Record<string, string> = {}) =>
        request(app.getHttpServer())
          .post('/boundaries/slow-write')
          .set({ 'idempotency-key': key, ...headers })
          .send({ reference });
      const slow = post({ 'x-sleep': '1500' }).then((res) => res);
      // The slow attempt is inside its phase (its write made, its snapshot taken).
      for (let tries = 0; tries < 100; tries++) {
        const rows: unknown[] = await dataSource.query(
          `SELECT 1 FROM pg_stat_activity WHERE state = 'idle in transaction' AND query LIKE '%phased_test_effects%'`,
        );
        if (rows.length > 0) break;
        await sleep(20);
      }
      await dataSource.query(
        `UPDATE idempotency_keys SET locked_until = now() WHERE idem_key = $1`,
        [key],
      );
      const takeover = await post();
      expect(takeover.status).toBe(201);
      const zombie = await slow;
      expect(zombie.status).toBe(409);
      const effects: unknown[] = await dataSource.query(
        'SELECT 1 FROM phased_test_effects WHERE tag = $1',
        [reference],
      );
      expect(effects).toHaveLength(1);
    });
  });
});
