import { randomUUID } from 'node:crypto';
import { Body, Controller, type INestApplication, Injectable, Post } from '@nestjs/common';
import { ValidationPipe } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Propagation, TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
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

class TagDto {
  @IsString()
  tag: string;
}

/** What a retry loop sees of a 40001 (a real one needs two racing transactions). */
class SerializationFailure extends Error {
  readonly code = '40001';
}

@Injectable()
class Ledger {
  constructor(readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  async debit(tag: string): Promise<void> {
    await this.txHost.tx.query(`INSERT INTO phased_test_effects (tag) VALUES ($1)`, [tag]);
  }
}

@Controller('joined')
class JoinedController {
  constructor(private readonly ledger: Ledger) {}

  /** A phase joined to the handler's own transaction, which is retried once on a 40001. */
  @Post('outer')
  @Idempotent({ phased: true })
  async outer(@Body() body: TagDto, @Phases() phases: IdempotentPhases) {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.ledger.txHost.withTransaction(async () => {
          const debit = await phases.transaction('debit', async () => {
            await this.ledger.debit(body.tag);
            return { debited: body.tag };
          });
          // Inside the same transaction, the phase is not run twice.
          expect(await phases.transaction('debit', () => Promise.resolve('again'))).toEqual(debit);
          if (attempt === 1) throw new SerializationFailure('could not serialize access');
          return debit;
        });
      } catch (error) {
        if (!(error instanceof SerializationFailure)) throw error;
      }
    }
  }

  /** A phase in a savepoint (Propagation.Nested) that rolls back once, then is retried. */
  @Post('savepoint')
  @Idempotent({ phased: true })
  async savepoint(@Body() body: TagDto, @Phases() phases: IdempotentPhases) {
    const { txHost } = this.ledger;
    return txHost.withTransaction(async () => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await txHost.withTransaction(Propagation.Nested, async () => {
            const debit = await phases.transaction('debit', async () => {
              await this.ledger.debit(body.tag);
              return { debited: body.tag };
            });
            if (attempt === 1) throw new SerializationFailure('roll the savepoint back');
            return debit;
          });
        } catch (error) {
          if (!(error instanceof SerializationFailure)) throw error;
        }
      }
    });
  }

  /** The recovery point once the handler's own transaction holding a phase has committed. */
  @Post('point')
  @Idempotent({ phased: true })
  async point(@Body() body: TagDto, @Phases() phases: IdempotentPhases) {
    await this.ledger.txHost.withTransaction(() =>
      phases.transaction('debit', async () => {
        await this.ledger.debit(body.tag);
        return 'debited';
      }),
    );
    return { recoveryPoint: phases.recoveryPoint };
  }

  /** A phase nested in another; the outer phase runs again after its first try rolled back. */
  @Post('nested')
  @Idempotent({ phased: true })
  async nested(@Body() body: TagDto, @Phases() phases: IdempotentPhases) {
    let failed = false;
    const run = () =>
      phases.transaction('outer', async () => {
        await phases.transaction('inner', async () => {
          await this.ledger.debit(`${body.tag}-inner`);
          return 'inner';
        });
        if (!failed) {
          failed = true;
          throw new SerializationFailure('could not serialize access');
        }
        return 'outer';
      });
    try {
      await run();
    } catch {
      await run();
    }
    // After the commit, the inner phase counts as recorded: it does not run a third time.
    return phases.transaction('inner', () => Promise.resolve('again'));
  }
}

describe('phases.transaction joined to an enclosing transaction that rolls back', () => {
  let app: INestApplication;
  const db = new TestDatabase();

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [...libraryInfrastructure(), IdempotencyModule.forRoot({ replayCache: false })],
      controllers: [JoinedController],
      providers: [Ledger],
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

  const post = (path: string, tag: string, key: string) =>
    request(app.getHttpServer()).post(path).set('idempotency-key', key).send({ tag });
  const writes = (tag: string) =>
    db.query('SELECT tag FROM phased_test_effects WHERE tag LIKE $1', [`${tag}%`]);
  const steps = async (key: string) =>
    (
      await db.query<{ step_state: Record<string, string> }>(
        'SELECT step_state FROM idempotency_keys WHERE idem_key = $1',
        [key],
      )
    )[0].step_state;

  it('runs the phase again when the transaction it joined rolled back', async () => {
    const key = `k-${randomUUID()}`;
    const tag = `outer-${randomUUID()}`;
    const res = await post('/joined/outer', tag, key);
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ debited: tag });
    expect(await steps(key)).toHaveProperty('debit');
    expect(await writes(tag)).toHaveLength(1);
  });

  it('runs a nested phase again when the phase around it rolled back, and once only', async () => {
    const key = `k-${randomUUID()}`;
    const tag = `nested-${randomUUID()}`;
    const res = await post('/joined/nested', tag, key);
    expect(res.status).toBe(201);
    expect(res.text).toBe('inner');
    expect(await steps(key)).toHaveProperty('inner');
    expect(await writes(tag)).toHaveLength(1);
  });

  it('runs the phase again when the savepoint it joined rolled back', async () => {
    const key = `k-${randomUUID()}`;
    const tag = `savepoint-${randomUUID()}`;
    const res = await post('/joined/savepoint', tag, key);
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ debited: tag });
    expect(await steps(key)).toHaveProperty('debit');
    expect(await writes(tag)).toHaveLength(1);
  });

  it('reports the joined phase as the recovery point once its transaction committed', async () => {
    const key = `k-${randomUUID()}`;
    const tag = `point-${randomUUID()}`;
    const res = await post('/joined/point', tag, key);
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ recoveryPoint: 'debit' });
    expect(await writes(tag)).toHaveLength(1);
  });
});
