import { randomUUID } from 'node:crypto';
import {
  Body,
  Controller,
  type INestApplication,
  Post,
  ServiceUnavailableException,
  ValidationPipe,
} from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { IsString } from 'class-validator';
import {
  Idempotent,
  IdempotencyModule,
  type IdempotentPhases,
  Phases,
} from 'nestjs-pg-idempotency';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { libraryInfrastructure } from '../support/library-infrastructure';
import { migrateTestDatabase } from '../support/migrations';
import { TestDatabase } from '../support/test-database';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const failedOnce = new Set<string>();
const calls = new Map<string, number>();

class TagDto {
  @IsString()
  tag: string;
}

@Controller('parallel')
class ParallelController {
  /** Two calls made in parallel; `a` fails once (a transient 503) while `b` is in its 400 ms. */
  @Post()
  @Idempotent({ phased: true, leaseSeconds: 60 })
  run(@Body() body: TagDto, @Phases() phases: IdempotentPhases) {
    return Promise.all([
      phases.external('a', async () => {
        if (!failedOnce.has(body.tag)) {
          // Fails once `b` has been called: its start is recorded, its result is not yet.
          while (!calls.has(body.tag)) await sleep(10);
          failedOnce.add(body.tag);
          throw new ServiceUnavailableException('a failed');
        }
        return 'a';
      }),
      phases.external('b', async () => {
        calls.set(body.tag, (calls.get(body.tag) ?? 0) + 1);
        await sleep(400);
        return 'b';
      }),
    ]);
  }
}

describe('a transient failure while a sibling step still runs', () => {
  let app: INestApplication;
  const db = new TestDatabase();

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [...libraryInfrastructure(), IdempotencyModule.forRoot({ replayCache: false })],
      controllers: [ParallelController],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    app.useGlobalPipes(new ValidationPipe({ transform: true }));
    await migrateTestDatabase(app.get(DataSource));
    await app.init();
  });
  afterAll(async () => {
    await app?.close();
    await db.close();
  });

  it("leaves the lease released for the client's retry when the sibling ends", async () => {
    const key = `k-${randomUUID()}`;
    const tag = randomUUID();
    const post = () =>
      request(app.getHttpServer()).post('/parallel').set('idempotency-key', key).send({ tag });
    const leaseLive = async () =>
      (
        await db.query<{ live: boolean }>(
          'SELECT locked_until > now() AS live FROM idempotency_keys WHERE idem_key = $1',
          [key],
        )
      )[0].live;

    expect((await post()).status).toBe(503);
    expect(await leaseLive()).toBe(false);

    await sleep(600); // `b` of the attempt that answered 503 has ended meanwhile
    expect(await leaseLive()).toBe(false);
    const retry = await post();
    expect(retry.headers['retry-after']).toBeUndefined();
    expect(retry.status).toBe(201);
    expect(retry.body).toEqual(['a', 'b']);
    // `b` never recorded its result under the ended attempt: the retry found it uncertain and,
    // without a reconcile, called it again (under the same child key downstream).
    expect(calls.get(tag)).toBe(2);
  });
});
