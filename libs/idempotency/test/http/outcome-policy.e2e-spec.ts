import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { randomUUID } from 'node:crypto';
import { Body, Controller, type INestApplication, Post } from '@nestjs/common';
import { IsString } from 'class-validator';
import request from 'supertest';
import {
  defaultShouldStore,
  IDEMPOTENCY_DIAGNOSTICS_CHANNEL,
  type IdempotencyEvent,
  IdempotencyModule,
  Idempotent,
} from 'nestjs-pg-idempotency';
import type { DataSource } from 'typeorm';
import { createLibraryApp, Effects } from './library-app';

class TagDto {
  @IsString()
  tag: string;
}

/** Thrown after an effect another system already committed: retrying would repeat it. */
class AfterExternalEffectError extends Error {}

@Controller('policy')
class PolicyController {
  constructor(private readonly effects: Effects) {}

  /** The effect elsewhere happened, then the handler failed: the failure is final. */
  @Post('after-effect')
  @Idempotent()
  async afterEffect(@Body() body: TagDto) {
    await this.effects.record('policy/after-effect', body.tag);
    throw new AfterExternalEffectError(`secret detail of ${body.tag}`);
  }

  /** An ordinary bug: released, as always. */
  @Post('bug')
  @Idempotent()
  async bug(@Body() body: TagDto) {
    await this.effects.record('policy/bug', body.tag);
    throw new Error('a bug');
  }
}

/** The events of one scope that reached the diagnostics channel. */
function listen(scope: string): { events: IdempotencyEvent[]; stop(): void } {
  const events: IdempotencyEvent[] = [];
  const listener = (message: unknown) => {
    const event = message as IdempotencyEvent;
    if (event.scope === scope) events.push(event);
  };
  subscribe(IDEMPOTENCY_DIAGNOSTICS_CHANNEL, listener);
  return { events, stop: () => unsubscribe(IDEMPOTENCY_DIAGNOSTICS_CHANNEL, listener) };
}

describe('outcome policy and diagnostics channel', () => {
  let app: INestApplication;
  let dataSource: DataSource;
  const seenByHook: IdempotencyEvent[] = [];
  const policyCalls: { status: number; error: unknown }[] = [];

  beforeAll(async () => {
    ({ app, dataSource } = await createLibraryApp(
      IdempotencyModule.forRoot({
        onEvent: (event) => seenByHook.push(event),
        shouldStore: (status, error) => {
          policyCalls.push({ status, error });
          return error instanceof AfterExternalEffectError || defaultShouldStore(status);
        },
      }),
      undefined,
      {},
      { controllers: [PolicyController] },
    ));
  });
  afterAll(() => app.close());

  const effects = async (route: string, tag: string) =>
    Number(
      (
        await dataSource.query<{ n: string }[]>(
          'SELECT count(*) AS n FROM library_test_effects WHERE route = $1 AND tag = $2',
          [route, tag],
        )
      )[0].n,
    );

  it('stores an error the policy marks final: the retry replays it, the handler runs once', async () => {
    const tag = randomUUID();
    const key = randomUUID();
    const post = () =>
      request(app.getHttpServer())
        .post('/policy/after-effect')
        .set('idempotency-key', key)
        .send({ tag });
    const first = await post();
    expect(first.status).toBe(500);
    expect(first.headers['content-type']).toContain('application/problem+json');
    // A stored non-HTTP error says nothing of its message.
    expect(first.text).not.toContain('secret detail');
    const call = policyCalls.find((c) => c.error instanceof AfterExternalEffectError);
    expect(call?.status).toBe(500);
    const replay = await post();
    expect(replay.status).toBe(500);
    expect(replay.text).toBe(first.text);
    // The stored failure rolled the handler's own write back, and the handler ran once: its
    // write shows in no row, and the key row holds the 500.
    expect(await effects('policy/after-effect', tag)).toBe(0);
    const [row] = await dataSource.query<{ response_code: number }[]>(
      `SELECT response_code FROM idempotency_keys WHERE endpoint = 'POST /policy/after-effect'
         AND idem_key = $1`,
      [key],
    );
    expect(row?.response_code).toBe(500);
    expect(policyCalls.filter((c) => c.error instanceof AfterExternalEffectError)).toHaveLength(1);
  });

  it('releases an error the policy does not store, and shows the error to it', async () => {
    const tag = randomUUID();
    const key = randomUUID();
    const post = () =>
      request(app.getHttpServer()).post('/policy/bug').set('idempotency-key', key).send({ tag });
    expect((await post()).status).toBe(500);
    expect((await post()).status).toBe(500);
    const bugCalls = policyCalls.filter(
      (c) => c.error instanceof Error && c.error.message === 'a bug',
    );
    expect(bugCalls.length).toBeGreaterThanOrEqual(2);
    expect(bugCalls.every((c) => c.status === 500)).toBe(true);
    const rows = await dataSource.query(
      `SELECT 1 FROM idempotency_keys WHERE endpoint = 'POST /policy/bug' AND idem_key = $1`,
      [key],
    );
    expect(rows).toHaveLength(0);
  });

  it('publishes every event the hook gets on the diagnostics channel', async () => {
    const scope = 'POST /widgets';
    const channel = listen(scope);
    const hookBefore = seenByHook.length;
    try {
      const key = randomUUID();
      const tag = randomUUID();
      const post = () =>
        request(app.getHttpServer()).post('/widgets').set('idempotency-key', key).send({ tag });
      expect((await post()).status).toBe(201);
      expect((await post()).status).toBe(201);
      expect(
        (
          await request(app.getHttpServer())
            .post('/widgets')
            .set('idempotency-key', key)
            .send({ tag: 'other' })
        ).status,
      ).toBe(422);
    } finally {
      channel.stop();
    }
    expect(channel.events.map((e) => e.type)).toEqual([
      'claimed',
      'completed',
      'replayed',
      'fingerprint_mismatch',
    ]);
    // The same objects the hook received, in the same order.
    expect(channel.events).toEqual(seenByHook.slice(hookBefore).filter((e) => e.scope === scope));
  });
});
