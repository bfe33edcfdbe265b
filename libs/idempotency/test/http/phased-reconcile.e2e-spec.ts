import {
  Body,
  Controller,
  GatewayTimeoutException,
  Headers,
  type INestApplication,
  Injectable,
  Post,
  ServiceUnavailableException,
  ValidationPipe,
} from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { IsString } from 'class-validator';
import { randomUUID } from 'node:crypto';
import {
  Idempotent,
  type IdempotencyEvent,
  IdempotencyModule,
  type IdempotentPhases,
  Phases,
} from 'nestjs-pg-idempotency';
import { Client } from 'pg';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { libraryInfrastructure } from '../support/library-infrastructure';
import { migrateTestDatabase } from '../support/migrations';
import { providerCharges, startChargeRecorder } from './charge-recorder';

let providerUrl = '';
const events: IdempotencyEvent[] = [];

/** What the step's work and reconcile did, by reference, across attempts. */
const calls = new Map<string, { work: number; reconcile: number }>();
const callsOf = (reference: string) => {
  const counts = calls.get(reference) ?? { work: 0, reconcile: 0 };
  calls.set(reference, counts);
  return counts;
};

class ChargeDto {
  @IsString()
  reference: string;
}

interface ChargeResult {
  chargeId: string;
}

/** Charges held after the processor answered, by reference, until the test releases them. */
const held = new Map<string, () => void>();

/**
 * A client of a card processor that ignores idempotency keys; it counts its calls. `x-fault`
 * (read by the controller) fails a charge: `fail-before-call` before the processor is reached,
 * `lose-answer` after it charged (the answer lost, as in a timeout). Either way the step started
 * and recorded nothing. `hold-after-charge` charges, then waits for the test (an attempt stalled
 * past its lease, as good as dead to a retry).
 */
@Injectable()
class CardProcessor {
  async charge(phases: IdempotentPhases, reference: string, fault?: string): Promise<ChargeResult> {
    callsOf(reference).work++;
    if (fault === 'fail-before-call') throw new ServiceUnavailableException('unreachable');
    const response = await phases.fetch('charge-card', `${providerUrl}/charges`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ amountCents: 100, currency: 'usd', reference }),
    });
    const { id } = (await response.json()) as { id: string };
    if (fault === 'lose-answer') throw new GatewayTimeoutException('the answer was lost');
    if (fault === 'hold-after-charge')
      await new Promise<void>((release) => held.set(reference, release));
    return { chargeId: id };
  }

  /**
   * Finds nothing, but takes its time: meanwhile another attempt took the lease over (done
   * here by hand, as a retry would after the lease ran out).
   */
  async findNothingWhileLeaseIsTaken(
    dataSource: DataSource,
    key: string,
    reference: string,
  ): Promise<ChargeResult | undefined> {
    callsOf(reference).reconcile++;
    await dataSource.query(
      `UPDATE idempotency_keys SET lease_owner = gen_random_uuid() WHERE idem_key = $1`,
      [key],
    );
    return undefined;
  }

  /** The charge the processor holds for `reference`, if any. */
  async findCharge(reference: string): Promise<ChargeResult | undefined> {
    callsOf(reference).reconcile++;
    const [charge] = await providerCharges(providerUrl, reference);
    return charge ? { chargeId: charge.id } : undefined;
  }
}

@Controller('reconcile')
class ReconcilingController {
  constructor(
    private readonly processor: CardProcessor,
    private readonly dataSource: DataSource,
  ) {}

  // The package README's example, as written there.
  @Post('charge')
  @Idempotent({ phased: true })
  charge(
    @Body() dto: ChargeDto,
    @Phases() phases: IdempotentPhases,
    @Headers('x-fault') fault?: string,
  ) {
    return phases.external(
      'charge',
      () => this.processor.charge(phases, dto.reference, fault),
      // Only on an attempt that finds the step uncertain: the charge by our reference, if any.
      { reconcile: () => this.processor.findCharge(dto.reference) },
    );
  }

  /** A reconcile during which the lease is lost: the call must not follow. */
  // Its reconcile plays another process taking the lease, with a write of its own outside any
  // step: the write guard would refuse that, as it should an app's.
  @Post('charge-lease-lost')
  @Idempotent({ phased: true, writeGuard: 'off' })
  chargeLeaseLost(
    @Body() dto: ChargeDto,
    @Phases() phases: IdempotentPhases,
    @Headers('idempotency-key') key: string,
    @Headers('x-fault') fault?: string,
  ) {
    return phases.external('charge', () => this.processor.charge(phases, dto.reference, fault), {
      reconcile: () =>
        this.processor.findNothingWhileLeaseIsTaken(this.dataSource, key, dto.reference),
    });
  }

  /** The same step without `reconcile`: the call is made again. */
  @Post('charge-without-reconcile')
  @Idempotent({ phased: true })
  chargeWithoutReconcile(
    @Body() dto: ChargeDto,
    @Phases() phases: IdempotentPhases,
    @Headers('x-fault') fault?: string,
  ) {
    return phases.external('charge', () => this.processor.charge(phases, dto.reference, fault));
  }
}

describe('phased mode: uncertain external steps, reconciled', () => {
  let app: INestApplication;
  let provider: { url: string; close(): Promise<void> };
  let dataSource: DataSource;

  beforeAll(async () => {
    // A processor without idempotency: a second call charges again.
    provider = await startChargeRecorder({ ignoreKeys: true });
    providerUrl = provider.url;
    const moduleRef = await Test.createTestingModule({
      imports: [
        ...libraryInfrastructure(),
        IdempotencyModule.forRoot({ replayCache: false, onEvent: (event) => events.push(event) }),
      ],
      controllers: [ReconcilingController],
      providers: [CardProcessor],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    app.useGlobalPipes(new ValidationPipe({ transform: true }));
    dataSource = app.get(DataSource);
    await migrateTestDatabase(dataSource);
    await app.init();
  });
  afterAll(async () => {
    await app?.close();
    await provider?.close();
  });
  beforeEach(() => {
    events.length = 0;
  });
  // A failed expectation must not leave a held attempt hanging the suite.
  afterEach(() => {
    for (const release of held.values()) release();
    held.clear();
  });

  const post = (path: string, tag: string, key: string, fault?: string) =>
    request(app.getHttpServer())
      .post(path)
      .set({ 'idempotency-key': key, ...(fault ? { 'x-fault': fault } : {}) })
      .send({ reference: tag });

  const keyRow = async (key: string) =>
    (
      await dataSource.query<
        { status: string; started_steps: string[] | null; step_state: object }[]
      >('SELECT status, started_steps, step_state FROM idempotency_keys WHERE idem_key = $1', [key])
    )[0];

  const stepEvents = () =>
    events
      .filter((event) => event.type === 'step_uncertain' || event.type === 'step_reconciled')
      .map(({ type, step, found, scope, mode }) => ({ type, step, found, scope, mode }));

  it('a step that never started: records its start, then calls work once and never reconcile', async () => {
    const key = `k-${randomUUID()}`;
    const tag = `t-${randomUUID()}`;
    await request(app.getHttpServer()).post('/reconcile/none').expect(404); // warms the pool

    const sent: string[] = [];
    const original = Client.prototype.query;
    Client.prototype.query = function (this: Client, ...args: unknown[]) {
      const first = args[0];
      sent.push(typeof first === 'string' ? first : String((first as { text?: string })?.text));
      return (original as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof Client.prototype.query;
    let res: request.Response;
    try {
      res = await post('/reconcile/charge', tag, key);
    } finally {
      Client.prototype.query = original;
    }

    expect(res.status).toBe(201);
    const [charge] = await providerCharges(providerUrl, tag);
    expect(res.body).toEqual({ chargeId: charge.id });
    expect(calls.get(tag)).toEqual({ work: 1, reconcile: 0 });
    expect(stepEvents()).toEqual([]);
    expect(await keyRow(key)).toEqual({
      status: 'completed',
      started_steps: ['charge'],
      step_state: { charge: JSON.stringify({ chargeId: charge.id }) },
    });
    // Round trips: the claim, the step's start, its result, the response. The start is the one
    // statement this feature adds to each external step.
    const statement =
      /INSERT INTO idempotency_keys|SET started_steps|SET recovery_point|status = 'completed'/;
    expect(sent.map((sql) => statement.exec(sql)?.[0] ?? sql)).toEqual([
      'INSERT INTO idempotency_keys',
      'SET started_steps',
      'SET recovery_point',
      "status = 'completed'",
    ]);
  });

  it('an uncertain step whose reconcile finds the outcome: recorded and returned, work not called again', async () => {
    const key = `k-${randomUUID()}`;
    const tag = `t-${randomUUID()}`;
    // The processor charged, the answer was lost: the step started and recorded nothing.
    await post('/reconcile/charge', tag, key, 'lose-answer').expect(504);
    const [charge] = await providerCharges(providerUrl, tag);
    expect(await keyRow(key)).toMatchObject({
      status: 'in_progress',
      started_steps: ['charge'],
      step_state: {},
    });
    expect(stepEvents()).toEqual([]);

    // The failure ended the lease: the retry resumes at once and finds the step uncertain.
    const retry = await post('/reconcile/charge', tag, key).expect(201);
    expect(retry.body).toEqual({ chargeId: charge.id });
    expect(calls.get(tag)).toEqual({ work: 1, reconcile: 1 });
    expect(await providerCharges(providerUrl, tag)).toHaveLength(1);
    expect(await keyRow(key)).toEqual({
      status: 'completed',
      started_steps: ['charge'],
      step_state: { charge: JSON.stringify({ chargeId: charge.id }) },
    });
    const scope = 'POST /reconcile/charge';
    expect(stepEvents()).toEqual([
      { type: 'step_uncertain', step: 'charge', found: undefined, scope, mode: 'phased' },
      { type: 'step_reconciled', step: 'charge', found: true, scope, mode: 'phased' },
    ]);

    const replay = await post('/reconcile/charge', tag, key).expect(201);
    expect(replay.text).toBe(retry.text);
    expect(calls.get(tag)).toEqual({ work: 1, reconcile: 1 });
  });

  it('an uncertain step whose reconcile finds nothing: work is called once', async () => {
    const key = `k-${randomUUID()}`;
    const tag = `t-${randomUUID()}`;
    // Failed before reaching the processor, which the library cannot know: uncertain too.
    await post('/reconcile/charge', tag, key, 'fail-before-call').expect(503);
    expect(await providerCharges(providerUrl, tag)).toHaveLength(0);
    expect(calls.get(tag)).toEqual({ work: 1, reconcile: 0 });

    const retry = await post('/reconcile/charge', tag, key).expect(201);
    const charges = await providerCharges(providerUrl, tag);
    expect(charges).toHaveLength(1);
    expect(retry.body).toEqual({ chargeId: charges[0].id });
    // One work call on the retry, after the reconcile that found nothing.
    expect(calls.get(tag)).toEqual({ work: 2, reconcile: 1 });
    expect(stepEvents()).toEqual([
      expect.objectContaining({ type: 'step_uncertain', step: 'charge' }),
      expect.objectContaining({ type: 'step_reconciled', step: 'charge', found: false }),
    ]);
    expect(await keyRow(key)).toMatchObject({ status: 'completed', started_steps: ['charge'] });
  });

  it('an attempt that lost its lease while it reconciled does not call: its successor decides', async () => {
    const key = `k-${randomUUID()}`;
    const tag = `t-${randomUUID()}`;
    await post('/reconcile/charge-lease-lost', tag, key, 'fail-before-call').expect(503);
    expect(calls.get(tag)).toEqual({ work: 1, reconcile: 0 });

    const retry = await post('/reconcile/charge-lease-lost', tag, key);
    expect(retry.status).toBe(409);
    // Reconciled (and found nothing), then refused by the fenced start: no second call.
    expect(calls.get(tag)).toEqual({ work: 1, reconcile: 1 });
    expect(await providerCharges(providerUrl, tag)).toHaveLength(0);
  });

  it('without reconcile, an uncertain step is reported and called again: the processor charges twice', async () => {
    const key = `k-${randomUUID()}`;
    const tag = `t-${randomUUID()}`;
    await post('/reconcile/charge-without-reconcile', tag, key, 'lose-answer').expect(504);

    await post('/reconcile/charge-without-reconcile', tag, key).expect(201);
    // The hazard reconcile closes, with a processor that ignores the child key.
    expect(await providerCharges(providerUrl, tag)).toHaveLength(2);
    expect(calls.get(tag)).toEqual({ work: 2, reconcile: 0 });
    expect(stepEvents()).toEqual([
      {
        type: 'step_uncertain',
        step: 'charge',
        found: undefined,
        scope: 'POST /reconcile/charge-without-reconcile',
        mode: 'phased',
      },
    ]);
  });

  it('a retry that takes over an expired lease reconciles the step the stalled attempt started; the stalled attempt records nothing', async () => {
    const key = `k-${randomUUID()}`;
    const tag = `t-${randomUUID()}`;
    // .then() sends it now (supertest is lazy).
    const stalled = post('/reconcile/charge', tag, key, 'hold-after-charge').then((r) => r);
    for (let i = 0; i < 200 && !held.has(tag); i++) await new Promise((r) => setTimeout(r, 20));
    const [charge] = await providerCharges(providerUrl, tag);
    expect(charge).toBeDefined();
    await dataSource.query('UPDATE idempotency_keys SET locked_until = now() WHERE idem_key = $1', [
      key,
    ]);

    const takeover = await post('/reconcile/charge', tag, key).expect(201);
    expect(takeover.body).toEqual({ chargeId: charge.id });
    expect(calls.get(tag)).toEqual({ work: 1, reconcile: 1 });
    expect(stepEvents()).toEqual([
      expect.objectContaining({ type: 'step_uncertain', step: 'charge' }),
      expect.objectContaining({ type: 'step_reconciled', step: 'charge', found: true }),
    ]);

    // The stalled attempt wakes up: its record is fenced off, it answers 409.
    held.get(tag)?.();
    expect((await stalled).status).toBe(409);
    expect(await providerCharges(providerUrl, tag)).toHaveLength(1);
    expect(await keyRow(key)).toEqual({
      status: 'completed',
      started_steps: ['charge'],
      step_state: { charge: JSON.stringify({ chargeId: charge.id }) },
    });
  });
});
