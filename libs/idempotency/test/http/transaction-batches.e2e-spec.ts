import {
  type CallHandler,
  type ExecutionContext,
  type INestApplication,
  Injectable,
  type NestInterceptor,
} from '@nestjs/common';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { randomUUID } from 'node:crypto';
import { Client, type Pool, type PoolClient } from 'pg';
import { from, lastValueFrom } from 'rxjs';
import request from 'supertest';
import { IdempotencyModule } from 'nestjs-pg-idempotency';
import type { DataSource, EntitySubscriberInterface } from 'typeorm';
import { EventSubscriber } from 'typeorm';
import { BatchedTransaction } from '../../src/http/atomic/batched-transaction';
import { Socket } from 'node:net';
import { CoalescedWrites } from '../../src/http/atomic/coalesced-writes';
import { createLibraryApp } from './library-app';
import { nextClaim } from '../support/next-claim';
import { TransactionPerRequest } from '../support/transaction-per-request';
import type { InfrastructureOptions } from '../support/library-infrastructure';

/**
 * How an atomic request's transaction is sent: by default the library opens it itself, the
 * claim riding on START TRANSACTION and the record on COMMIT, with literals written into the
 * SQL by the driver's escaping and the two statements prepared per connection. Each way out of
 * that path (a transaction already open, the adapter's default options, prepared statements
 * off) and each thing it must honour (isolation levels, lost prepared statements, keys and
 * bodies full of quotes) is checked here on the real database.
 */
const tag = () => `t-${randomUUID()}`;

/** Every query text the app sends while `send` runs. */
async function queriesDuring(send: () => Promise<unknown>): Promise<string[]> {
  const sent: string[] = [];
  const original = Client.prototype.query;
  Client.prototype.query = function (this: Client, ...args: unknown[]) {
    const first = args[0];
    sent.push(typeof first === 'string' ? first : String((first as { text?: string })?.text));
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof Client.prototype.query;
  try {
    await send();
  } finally {
    Client.prototype.query = original;
  }
  return sent;
}

/** The queries of one create on POST /widgets with a fresh key. */
function queriesOfCreate(app: INestApplication, tagValue: string): Promise<string[]> {
  return queriesDuring(() =>
    request(app.getHttpServer())
      .post('/widgets')
      .set('idempotency-key', randomUUID())
      .send({ tag: tagValue })
      .expect(201),
  );
}

async function effects(dataSource: DataSource, tagValue: string): Promise<string[]> {
  const rows: { route: string }[] = await dataSource.query(
    'SELECT route FROM library_test_effects WHERE tag = $1 ORDER BY id',
    [tagValue],
  );
  return rows.map((row) => row.route);
}

/**
 * The connection the pool hands out next (the one just released, if it kept it) is in no
 * transaction: nothing is pending on it.
 */
async function expectNextConnectionOutsideTransaction(pool: Pool): Promise<void> {
  const next = await pool.connect();
  try {
    const { rows } = await next.query<{ xid: string | null }>(
      'SELECT pg_current_xact_id_if_assigned()::text AS xid',
    );
    expect(rows).toEqual([{ xid: null }]);
  } finally {
    next.release();
  }
}

async function keyRow(dataSource: DataSource, idemKey: string) {
  const [row] = await dataSource.query(
    `SELECT idem_key, status, response_code, convert_from(response_body, 'UTF8') AS body
       FROM idempotency_keys WHERE idem_key = $1`,
    [idemKey],
  );
  return row;
}

async function libraryApp(
  options: {
    module?: { preparedStatements?: boolean };
    infrastructure?: InfrastructureOptions;
  } = {},
) {
  return createLibraryApp(
    IdempotencyModule.forRoot({ replayCache: false, ...options.module }),
    undefined,
    options.infrastructure,
  );
}

/**
 * Two requests with one key, the second sent while the first holds its uncommitted claim: the
 * second waits, then gets the replay (READ COMMITTED) or a 409 with Retry-After (a stricter
 * level, where PostgreSQL answers the wait with a serialization failure), never a 500. The
 * effect happens once either way.
 */
async function duplicateMeetsRunningTwin(
  app: INestApplication,
  dataSource: DataSource,
): Promise<void> {
  const t = tag();
  const k = randomUUID();
  const send = () =>
    request(app.getHttpServer()).post('/slow').set('idempotency-key', k).send({ tag: t });
  const first = send().then((res) => res);
  await new Promise((done) => setTimeout(done, 100));
  const answers = await Promise.all([first, send().then((res) => res)]);
  // Which of the two claimed first is the machine's business; the other met it running.
  const original = answers.find((res) => res.status === 201);
  const other = answers.find((res) => res !== original);
  expect(original).toBeDefined();
  if (other?.status === 201) expect(other.text).toBe(original?.text);
  else
    expect({ status: other?.status, retryAfter: other?.headers['retry-after'] }).toEqual({
      status: 409,
      retryAfter: expect.any(String),
    });
  expect(await effects(dataSource, t)).toEqual(['slow']);
  const later = await send().expect(201);
  expect(later.text).toBe(original?.text);
}

describe('atomic transactions opened by the library (the default)', () => {
  let app: INestApplication;
  let dataSource: DataSource;
  beforeAll(async () => {
    ({ app, dataSource } = await libraryApp());
  });
  afterAll(() => app.close());

  it('stores and replays keys and bodies full of quotes, backslashes and placeholders, byte for byte', async () => {
    // Printable ASCII, as the key parser allows: every character SQL quoting could trip on.
    const hostileKey = `it's a "key" $1 ; -- \\ /* ${randomUUID()} */ ''`;
    const hostileTag = `O'Brien \\ "quoted" $2 ; DROP TABLE idempotency_keys; -- ✓ 🎉 ${randomUUID()}`;
    const send = () =>
      request(app.getHttpServer())
        .post('/widgets')
        .set('idempotency-key', hostileKey)
        .send({ tag: hostileTag });

    const first = await send().expect(201);
    const replay = await send().expect(201);

    expect(first.body.tag).toBe(hostileTag);
    expect(replay.text).toBe(first.text);
    expect(await effects(dataSource, hostileTag)).toEqual(['widgets']);
    const row = await keyRow(dataSource, hostileKey);
    expect(row).toMatchObject({ idem_key: hostileKey, status: 'completed', response_code: 201 });
    expect(row.body).toBe(first.text);
  });

  it('holds each of its queries on the connection’s socket until the end of the turn', async () => {
    const hold = jest.spyOn(CoalescedWrites.prototype, 'hold');
    const t = tag();
    let streams: unknown[];
    try {
      await request(app.getHttpServer())
        .post('/widgets')
        .set('idempotency-key', randomUUID())
        .send({ tag: t })
        .expect(201);
      streams = hold.mock.calls.map(([stream]) => stream);
    } finally {
      hold.mockRestore();
    }
    // START with the claim, the handler's INSERT, the record with COMMIT: each on the socket
    // of the one connection the transaction holds, and all of them got to the database.
    expect(streams.length).toBeGreaterThanOrEqual(3);
    expect(streams[0]).toBeInstanceOf(Socket);
    expect(new Set(streams).size).toBe(1);
    expect(await effects(dataSource, t)).toEqual(['widgets']);
  });

  it('keeps TypeORM’s nesting on the transaction it opens itself: a nested one takes a savepoint', async () => {
    const t = tag();
    const insert = `INSERT INTO library_test_effects (route, tag) VALUES ($1, $2)`;
    const sent = await queriesDuring(() =>
      BatchedTransaction.run(dataSource, { afterStart: [] }, async (transaction) => {
        await transaction.manager.query(insert, ['outer', t]);
        await transaction.manager.transaction((inner) => inner.query(insert, ['kept', t]));
        await transaction.manager
          .transaction(async (inner) => {
            await inner.query(insert, ['undone', t]);
            throw new Error('the nested part fails');
          })
          .catch(() => undefined);
        // Back at the outer level: TypeORM's state says so, and the next nesting starts over.
        expect(transaction.manager.queryRunner?.isTransactionActive).toBe(true);
      }),
    );
    expect(sent.filter((text) => text.startsWith('START TRANSACTION'))).toHaveLength(1);
    expect(sent).toEqual(
      expect.arrayContaining([
        'SAVEPOINT typeorm_1',
        'RELEASE SAVEPOINT typeorm_1',
        'ROLLBACK TO SAVEPOINT typeorm_1',
        'COMMIT',
      ]),
    );
    expect(await effects(dataSource, t)).toEqual(['outer', 'kept']);
  });

  it('rolls back the transaction it opens itself when the work fails, and frees the connection', async () => {
    const t = tag();
    const pool = (dataSource.driver as unknown as { master: Pool }).master;
    await expect(
      BatchedTransaction.run(dataSource, { afterStart: [] }, async (transaction) => {
        await transaction.manager.query(
          `INSERT INTO library_test_effects (route, tag) VALUES ('failed', $1)`,
          [t],
        );
        throw new Error('the work fails');
      }),
    ).rejects.toThrow('the work fails');
    expect(await effects(dataSource, t)).toEqual([]);
    expect(pool.totalCount - pool.idleCount).toBe(0);
  });

  it('ends the whole transaction when the work fails inside a savepoint it left open', async () => {
    const t = tag();
    const pool = (dataSource.driver as unknown as { master: Pool }).master;
    await expect(
      BatchedTransaction.run(dataSource, { afterStart: [] }, async (transaction) => {
        await transaction.manager.query(
          `INSERT INTO library_test_effects (route, tag) VALUES ('left-open', $1)`,
          [t],
        );
        // A nested transaction (a savepoint) the work opens and never ends.
        await transaction.manager.queryRunner?.startTransaction();
        throw new Error('the work fails');
      }),
    ).rejects.toThrow('the work fails');
    expect(await effects(dataSource, t)).toEqual([]);
    expect(pool.totalCount - pool.idleCount).toBe(0);
    await expectNextConnectionOutsideTransaction(pool);
  });

  it('prepares its statements again when the session lost them (DEALLOCATE ALL, a pooler)', async () => {
    await request(app.getHttpServer())
      .post('/widgets')
      .set('idempotency-key', randomUUID())
      .send({ tag: tag() })
      .expect(201);
    // The pool hands out its most recently released connection first: the one that request
    // used, with the library's statements prepared. Drop them behind the library's back.
    const pool = (dataSource.driver as unknown as { master: Pool }).master;
    const client: PoolClient = await pool.connect();
    await client.query('DEALLOCATE ALL');
    client.release();

    const t = tag();
    const k = randomUUID();
    const sent = await queriesDuring(() =>
      request(app.getHttpServer())
        .post('/widgets')
        .set('idempotency-key', k)
        .send({ tag: t })
        .expect(201),
    );

    // EXECUTE failed (26000), the empty transaction was rolled back, and the claim went again
    // with its PREPARE: the request never noticed.
    expect(sent[0]).toMatch(/^START TRANSACTION;\nEXECUTE idempotency_claim_/);
    expect(sent[1]).toBe('ROLLBACK');
    expect(sent[2]).toMatch(/^START TRANSACTION;\nPREPARE idempotency_claim_[0-9a-f]{8} AS /);
    expect(await effects(dataSource, t)).toEqual(['widgets']);
    expect(await keyRow(dataSource, k)).toMatchObject({ status: 'completed', response_code: 201 });
  });

  it('rolls a stored failure back to its savepoint and commits the key with it', async () => {
    const t = tag();
    const k = randomUUID();
    const first = await request(app.getHttpServer())
      .post('/declined')
      .set('idempotency-key', k)
      .send({ tag: t })
      .expect(422);
    const replay = await request(app.getHttpServer())
      .post('/declined')
      .set('idempotency-key', k)
      .send({ tag: t })
      .expect(422);
    expect(replay.text).toBe(first.text);
    expect(await effects(dataSource, t)).toEqual([]);
    expect(await keyRow(dataSource, k)).toMatchObject({ status: 'completed', response_code: 422 });
  });
});

/** Counts TypeORM's transaction events, as an app's auditing subscriber would hear them. */
const heard: string[] = [];
@EventSubscriber()
class TransactionEventsSubscriber implements EntitySubscriberInterface {
  beforeTransactionStart() {
    heard.push('beforeTransactionStart');
  }
  afterTransactionStart() {
    heard.push('afterTransactionStart');
  }
  beforeTransactionCommit() {
    heard.push('beforeTransactionCommit');
  }
  afterTransactionCommit() {
    heard.push('afterTransactionCommit');
  }
  afterTransactionRollback() {
    heard.push('afterTransactionRollback');
  }
}

describe('atomic transactions with a subscriber of TypeORM’s transaction events', () => {
  let app: INestApplication;
  let dataSource: DataSource;
  beforeAll(async () => {
    ({ app, dataSource } = await libraryApp({
      infrastructure: { subscribers: [TransactionEventsSubscriber] },
    }));
  });
  afterAll(() => app.close());

  it('lets TypeORM open and commit them, so the subscriber hears each event once, and still batches', async () => {
    const t = tag();
    heard.length = 0;
    const sent = await queriesOfCreate(app, t);
    expect(heard).toEqual([
      'beforeTransactionStart',
      'afterTransactionStart',
      'beforeTransactionCommit',
      'afterTransactionCommit',
    ]);
    expect(sent[0]).toMatch(/^START TRANSACTION;\n/);
    expect(sent[sent.length - 1]).toMatch(/;\nCOMMIT$/);
    expect(await effects(dataSource, t)).toEqual(['widgets']);
  });

  it('commits the whole transaction when the work left a savepoint open, the record with it', async () => {
    const t = tag();
    const pool = (dataSource.driver as unknown as { master: Pool }).master;
    heard.length = 0;
    await BatchedTransaction.run(dataSource, { afterStart: [] }, async (transaction) => {
      await transaction.manager.query(
        `INSERT INTO library_test_effects (route, tag) VALUES ('left-open', $1)`,
        [t],
      );
      // A nested transaction (a savepoint) the work opens and never ends.
      await transaction.manager.queryRunner?.startTransaction();
      transaction.commitWith([
        {
          text: `INSERT INTO library_test_effects (route, tag) VALUES ('record', $1)`,
          values: [t],
        },
      ]);
    });
    expect(await effects(dataSource, t)).toEqual(['left-open', 'record']);
    expect(heard).toEqual(expect.arrayContaining(['afterTransactionCommit']));
    expect(pool.totalCount - pool.idleCount).toBe(0);
    await expectNextConnectionOutsideTransaction(pool);
  });

  it('tells it of the rollback when the handler fails transiently', async () => {
    heard.length = 0;
    await request(app.getHttpServer())
      .post('/crash')
      .set('idempotency-key', randomUUID())
      .send({ tag: tag() })
      .expect(500);
    expect(heard).toEqual([
      'beforeTransactionStart',
      'afterTransactionStart',
      'afterTransactionRollback',
    ]);
  });
});

describe('atomic transactions: a batch that fails before its PREPARE ran', () => {
  let app: INestApplication;
  let dataSource: DataSource;
  beforeAll(async () => {
    // A fresh pool: its connections have prepared nothing yet.
    ({ app, dataSource } = await libraryApp({ infrastructure: { poolSize: 2 } }));
  });
  afterAll(() => app.close());

  it('prepares the record again on that connection: the next request is not broken by it', async () => {
    // The handler swallowed an error, so the transaction is aborted when the COMMIT batch, with
    // the record's first PREPARE, arrives: the PREPARE never runs, and the request fails.
    const swallowed = tag();
    await request(app.getHttpServer())
      .post('/swallowed-error')
      .set('idempotency-key', randomUUID())
      .send({ tag: swallowed })
      .expect(500);
    expect(await effects(dataSource, swallowed)).toEqual([]);

    // The same connection (the pool hands out the one released last) must prepare the record
    // again, not EXECUTE a statement the session never got.
    const t = tag();
    const k = randomUUID();
    const sent = await queriesDuring(() =>
      request(app.getHttpServer())
        .post('/widgets')
        .set('idempotency-key', k)
        .send({ tag: t })
        .expect(201),
    );
    expect(sent[sent.length - 1]).toMatch(/^PREPARE idempotency_record_[0-9a-f]{8} AS /);
    expect(await effects(dataSource, t)).toEqual(['widgets']);
    expect(await keyRow(dataSource, k)).toMatchObject({ status: 'completed', response_code: 201 });
  });
});

/**
 * The app's transaction around the request, which fails after the handler returned the first
 * time each key is seen (a deferred constraint, a serialization failure at COMMIT, a later
 * interceptor throwing): the request's writes and its key roll back with it.
 */
@Injectable()
class TransactionFailingOnce implements NestInterceptor {
  private readonly seen = new Set<string>();

  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  intercept(context: ExecutionContext, next: CallHandler) {
    const key = String(
      context.switchToHttp().getRequest<{ headers: Record<string, string> }>().headers[
        'idempotency-key'
      ],
    );
    return from(
      this.txHost.withTransaction(async () => {
        const result = await lastValueFrom(next.handle(), { defaultValue: undefined });
        if (!this.seen.has(key)) {
          this.seen.add(key);
          throw new Error('the outer transaction failed after the handler');
        }
        return result;
      }),
    );
  }
}

describe('atomic requests inside an app transaction that rolls back, with the replay cache on', () => {
  let app: INestApplication;
  let dataSource: DataSource;
  beforeAll(async () => {
    ({ app, dataSource } = await createLibraryApp(IdempotencyModule.forRoot({}), (nest) =>
      nest.useGlobalInterceptors(new TransactionFailingOnce(nest.get(TransactionHost))),
    ));
  });
  afterAll(() => app.close());

  it('does not replay from memory a response whose transaction never committed', async () => {
    const t = tag();
    const k = randomUUID();
    const send = () =>
      request(app.getHttpServer()).post('/widgets').set('idempotency-key', k).send({ tag: t });
    await send().expect(500);
    expect(await effects(dataSource, t)).toEqual([]);
    expect(await keyRow(dataSource, k)).toBeUndefined();

    // Nothing was written: the retry must run the handler, not get the first answer from memory.
    await send().expect(201);
    expect(await effects(dataSource, t)).toEqual(['widgets']);
    expect(await keyRow(dataSource, k)).toMatchObject({ status: 'completed', response_code: 201 });
  });

  it('never hands a duplicate the outcome of an attempt whose transaction has not committed', async () => {
    const t = tag();
    const k = randomUUID();
    const send = () =>
      request(app.getHttpServer()).post('/slow').set('idempotency-key', k).send({ tag: t });
    const claimed = nextClaim();
    const first = send().then((response) => response);
    await claimed; // the first holds the claim, uncommitted
    const duplicate = await send();
    expect((await first).status).toBe(500); // its app transaction rolled back after the handler
    // The duplicate waited on the row lock, then ran the handler itself: its 201 is committed.
    expect(duplicate.status).toBe(201);
    expect(await effects(dataSource, t)).toEqual(['slow']);
    expect(await keyRow(dataSource, k)).toMatchObject({ status: 'completed', response_code: 201 });
  });
});

describe('atomic transactions under a DataSource isolation level', () => {
  let app: INestApplication;
  let dataSource: DataSource;
  beforeAll(async () => {
    ({ app, dataSource } = await libraryApp({
      infrastructure: { isolationLevel: 'SERIALIZABLE' },
    }));
  });
  afterAll(() => app.close());

  it('opens its transaction at that level, with the claim in the same round trip', async () => {
    const t = tag();
    const sent = await queriesDuring(() =>
      request(app.getHttpServer())
        .post('/isolation')
        .set('idempotency-key', randomUUID())
        .send({ tag: t })
        .expect(201)
        .expect((res) => expect(res.body.isolation).toBe('serializable')),
    );
    expect(sent[0]).toMatch(/^START TRANSACTION ISOLATION LEVEL SERIALIZABLE;\n/);
    expect(sent.some((query) => query.startsWith('SET TRANSACTION'))).toBe(false);
    expect(await effects(dataSource, t)).toEqual(['isolation']);
  });

  it('answers a duplicate that waited on its running twin with a 409, not a 500', () =>
    duplicateMeetsRunningTwin(app, dataSource));
});

describe.each([
  [
    'the adapter has default transaction options',
    { infrastructure: { defaultTxOptions: { isolationLevel: 'REPEATABLE READ' as const } } },
    'repeatable read',
  ],
  [
    'a transaction is already open (the app opens one per request)',
    { interceptor: true },
    'read committed',
  ],
])(
  'atomic transactions when %s: one statement at a time, in that transaction',
  (_title, options, isolation) => {
    let app: INestApplication;
    let dataSource: DataSource;
    beforeAll(async () => {
      ({ app, dataSource } = await createLibraryApp(
        IdempotencyModule.forRoot({ replayCache: false }),
        (nest) => {
          if ('interceptor' in options)
            nest.useGlobalInterceptors(new TransactionPerRequest(nest.get(TransactionHost)));
        },
        'infrastructure' in options ? options.infrastructure : {},
      ));
    });
    afterAll(() => app.close());

    it('claims, runs and records in the one transaction, and replays', async () => {
      const t = tag();
      const k = randomUUID();
      let first = '';
      const sent = await queriesDuring(() =>
        request(app.getHttpServer())
          .post('/isolation')
          .set('idempotency-key', k)
          .send({ tag: t })
          .expect(201)
          .then((res) => {
            first = res.text;
            expect(res.body.isolation).toBe(isolation);
          }),
      );
      expect(sent.some((query) => query.startsWith('START TRANSACTION;'))).toBe(false);
      expect(sent.some((query) => /^WITH claim AS/.test(query.trim()))).toBe(true);
      const replay = await request(app.getHttpServer())
        .post('/isolation')
        .set('idempotency-key', k)
        .send({ tag: t })
        .expect(201);
      expect(replay.text).toBe(first);
      expect(await effects(dataSource, t)).toEqual(['isolation']);
      expect(await keyRow(dataSource, k)).toMatchObject({
        status: 'completed',
        response_code: 201,
      });
    });

    it('rolls a stored failure back to its savepoint and commits the key with it', async () => {
      const t = tag();
      const k = randomUUID();
      await request(app.getHttpServer())
        .post('/declined')
        .set('idempotency-key', k)
        .send({ tag: t })
        .expect(422);
      expect(await effects(dataSource, t)).toEqual([]);
      expect(await keyRow(dataSource, k)).toMatchObject({
        status: 'completed',
        response_code: 422,
      });
    });

    it('answers a duplicate that waited on its running twin with the replay or a 409, not a 500', () =>
      duplicateMeetsRunningTwin(app, dataSource));
  },
);

describe('atomic transactions with preparedStatements: false', () => {
  let app: INestApplication;
  let dataSource: DataSource;
  beforeAll(async () => {
    ({ app, dataSource } = await libraryApp({ module: { preparedStatements: false } }));
  });
  afterAll(() => app.close());

  it('sends the claim and the record whole in the START and COMMIT batches', async () => {
    const t = tag();
    const sent = await queriesOfCreate(app, t);
    expect(sent).toHaveLength(3);
    expect(sent[0]).toMatch(/^START TRANSACTION;\nWITH claim AS/);
    expect(sent[2]).toMatch(/^WITH recorded AS[\s\S]*;\nCOMMIT$/);
    expect(sent.join('\n')).not.toMatch(/PREPARE|EXECUTE/);
    expect(await effects(dataSource, t)).toEqual(['widgets']);
  });
});
