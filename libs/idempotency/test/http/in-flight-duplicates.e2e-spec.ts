import { Body, Controller, type INestApplication, Post } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { IsInt, IsString } from 'class-validator';
import request from 'supertest';
import { IdempotencyModule, IdempotencyProblemType, Idempotent } from 'nestjs-pg-idempotency';
import type { DataSource } from 'typeorm';
// Not public: the test reads how many keys are in flight, to see that none is left behind.
import { InFlightKeys } from '../../src/http/replay/in-flight-keys';
import { nextClaim } from '../support/next-claim';
import { createLibraryApp, Effects } from './library-app';

class SlowDto {
  @IsString()
  tag: string;

  @IsInt()
  delayMs: number;
}

/** Writes, takes its time, and fails the first attempt of each tag with a transient error. */
@Controller('in-flight')
class InFlightController {
  private readonly attempts = new Map<string, number>();

  constructor(private readonly effects: Effects) {}

  @Post('flaky')
  @Idempotent()
  async flaky(@Body() body: SlowDto) {
    const id = await this.effects.record('in-flight/flaky', body.tag);
    await new Promise((resolve) => setTimeout(resolve, body.delayMs));
    const attempt = (this.attempts.get(body.tag) ?? 0) + 1;
    this.attempts.set(body.tag, attempt);
    if (attempt === 1) throw new Error('transient: the first attempt fails');
    return { id, attempt };
  }

  @Post('slow')
  @Idempotent()
  async slow(@Body() body: SlowDto) {
    const id = await this.effects.record('in-flight/slow', body.tag);
    await new Promise((resolve) => setTimeout(resolve, body.delayMs));
    return { id };
  }
}

/** Duplicates of a key whose first attempt runs in this process wait in memory for its outcome. */
describe('in-flight duplicates in one process', () => {
  let app: INestApplication;
  let dataSource: DataSource;
  beforeAll(async () => {
    ({ app, dataSource } = await createLibraryApp(
      IdempotencyModule.forRoot({ lockTimeoutMs: 2000 }),
      undefined,
      { poolSize: 4 },
      { controllers: [InFlightController] },
    ));
  });
  afterEach(() => {
    // Every attempt landed: no key stays in flight after its burst.
    expect(app.get(InFlightKeys, { strict: false }).size).toBe(0);
  });
  afterAll(() => app.close());

  const post = (path: string, key: string, body: object) =>
    request(app.getHttpServer()).post(path).set('idempotency-key', key).send(body);

  const effects = async (tag: string) =>
    (
      await dataSource.query('SELECT count(*)::int AS n FROM library_test_effects WHERE tag = $1', [
        tag,
      ])
    )[0].n;

  it('lets one waiting duplicate claim the key the first attempt released; the others replay its outcome', async () => {
    const key = randomUUID();
    const tag = randomUUID();
    const claimed = nextClaim();
    const first = post('/in-flight/flaky', key, { tag, delayMs: 300 }).then((r) => r);
    await claimed; // the first holds the key
    const duplicates = await Promise.all(
      Array.from({ length: 10 }, () =>
        post('/in-flight/flaky', key, { tag, delayMs: 300 }).then((r) => r),
      ),
    );
    expect((await first).status).toBe(500);
    const winners = duplicates.filter((response) => response.status === 201);
    expect(winners).toHaveLength(10);
    for (const response of winners) expect(response.text).toBe(winners[0].text);
    expect(winners[0].body.attempt).toBe(2);
    expect(await effects(tag)).toBe(1); // the first attempt's write rolled back
  });

  it('answers a waiting duplicate with another request 422 once the first attempt commits', async () => {
    const key = randomUUID();
    const tag = randomUUID();
    const claimed = nextClaim();
    const first = post('/in-flight/slow', key, { tag, delayMs: 300 }).then((r) => r);
    await claimed; // the first holds the key
    const other = await post('/in-flight/slow', key, { tag, delayMs: 301 });
    expect((await first).status).toBe(201);
    expect(other.status).toBe(422);
    expect(other.body.type).toBe(IdempotencyProblemType.keyReused);
    expect(await effects(tag)).toBe(1);
  });

  it('gives up after lockTimeoutMs with 409 and Retry-After, holding no connection meanwhile', async () => {
    const key = randomUUID();
    const tag = randomUUID();
    // The first attempt holds the key 1.5 s past lockTimeoutMs: a duplicate that starts its wait
    // up to 1.5 s after it (a loaded machine) still times out first.
    const claimed = nextClaim();
    const first = post('/in-flight/slow', key, { tag, delayMs: 3500 }).then((r) => r);
    await claimed; // the first holds the key
    // Eight duplicates on a pool of four: were they waiting on the row lock, nothing else would run.
    const duplicates = Array.from({ length: 8 }, () =>
      post('/in-flight/slow', key, { tag, delayMs: 3500 }).then((r) => r),
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    const otherTag = randomUUID();
    const startedOther = Date.now();
    await post('/in-flight/slow', randomUUID(), { tag: otherTag, delayMs: 0 }).expect(201);
    // Behind lock waits it would take lockTimeoutMs (2 s) at least.
    expect(Date.now() - startedOther).toBeLessThan(1500);
    for (const response of await Promise.all(duplicates)) {
      expect(response.status).toBe(409);
      expect(response.headers['retry-after']).toBe('1');
      expect(response.body.type).toBe(IdempotencyProblemType.keyInUse);
    }
    expect((await first).status).toBe(201);
    expect(await effects(tag)).toBe(1);
  });
});
