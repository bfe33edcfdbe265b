import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { randomUUID } from 'node:crypto';
import { Body, Controller, type INestApplication, Logger, Param, Post } from '@nestjs/common';
import { InjectRepository, TypeOrmModule } from '@nestjs/typeorm';
import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { IsString } from 'class-validator';
import {
  IDEMPOTENCY_DIAGNOSTICS_CHANNEL,
  type IdempotencyEvent,
  IdempotencyModule,
  IdempotencyProblemType,
  Idempotent,
  type IdempotentPhases,
  Phases,
} from 'nestjs-pg-idempotency';
import request from 'supertest';
import {
  Column,
  DataSource,
  Entity,
  type EntityManager,
  PrimaryGeneratedColumn,
  type Repository,
  Tree,
  TreeChildren,
  TreeParent,
} from 'typeorm';
import { GuardNote } from './guard-note.entity';
import { createLibraryApp } from './library-app';

class TagDto {
  @IsString()
  tag: string;
}

/** A nested-set tree: TypeORM reads the bounds, moves them with raw SQL, then inserts. */
@Entity({ name: 'guard_test_categories' })
@Tree('nested-set')
class GuardCategory {
  @PrimaryGeneratedColumn()
  id: number;

  @Column({ type: 'text' })
  tag: string;

  @TreeChildren()
  children: GuardCategory[];

  @TreeParent()
  parent: GuardCategory | null;
}

/** Each kind of TypeORM write, given the repository and the manager to write through. */
const WRITES: Record<
  string,
  (notes: Repository<GuardNote>, manager: EntityManager, tag: string) => Promise<unknown>
> = {
  save: (notes, _, tag) => notes.save(notes.create({ tag, note: 'saved' })),
  insert: (notes, _, tag) => notes.insert({ tag, note: 'inserted' }),
  update: (notes, _, tag) => notes.update({ tag }, { note: 'updated' }),
  delete: (notes, _, tag) => notes.delete({ tag }),
  remove: async (notes, _, tag) => notes.remove(await notes.findOneByOrFail({ tag })),
  'soft-remove': async (notes, _, tag) => notes.softRemove(await notes.findOneByOrFail({ tag })),
  'soft-delete': (notes, _, tag) => notes.softDelete({ tag }),
  'query-builder-insert': (_, manager, tag) =>
    manager.createQueryBuilder().insert().into(GuardNote).values({ tag, note: 'built' }).execute(),
  'manager-save': (_, manager, tag) => manager.save(GuardNote, { tag, note: 'manager' }),
  // TypeORM broadcasts no entity event for these: the guard reads the statement's first words.
  'raw-insert': (_, manager, tag) =>
    manager.query(`INSERT INTO guard_test_notes (tag, note) VALUES ($1, 'raw')`, [tag]),
  'raw-update-with-schema': (_, manager, tag) =>
    manager.query(`UPDATE public.guard_test_notes SET note = 'raw' WHERE tag = $1`, [tag]),
  'raw-delete-after-comment': (_, manager, tag) =>
    manager.query(`/* tidy up */ DELETE FROM "guard_test_notes" WHERE tag = $1`, [tag]),
  'insert-select': (_, manager, tag) =>
    manager
      .createQueryBuilder()
      .insert()
      .into(GuardNote, ['tag', 'note'])
      .valuesFromSelect((select) =>
        select
          .select('copied.tag', 'tag')
          .addSelect(`'selected'`, 'note')
          .from(GuardNote, 'copied')
          .where('copied.tag = :tag', { tag }),
      )
      .execute(),
  'update-by-table-name': (_, manager, tag) =>
    manager
      .createQueryBuilder()
      .update('public.guard_test_notes')
      .set({ note: 'named' })
      .where('tag = :tag', { tag })
      .execute(),
};

/** Writes that need the tag's row to exist already. */
const ON_EXISTING_ROW = new Set([
  'update',
  'delete',
  'remove',
  'soft-remove',
  'soft-delete',
  'raw-update-with-schema',
  'raw-delete-after-comment',
  'insert-select',
  'update-by-table-name',
]);

@Controller('guard')
class GuardController {
  constructor(
    @InjectRepository(GuardNote) private readonly notes: Repository<GuardNote>,
    private readonly dataSource: DataSource,
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
  ) {}

  private get inTransaction(): Repository<GuardNote> {
    return this.txHost.tx.getRepository(GuardNote);
  }

  /** A write through the transaction, then the classic bug: one through the injected repository. */
  @Post('outside/:write')
  @Idempotent()
  async outside(@Param('write') write: string, @Body() body: TagDto) {
    await this.inTransaction.save({ tag: body.tag, note: 'in the transaction' });
    await WRITES[write](this.notes, this.dataSource.manager, body.tag);
    return { ok: true };
  }

  @Post('inside/:write')
  @Idempotent()
  async inside(@Param('write') write: string, @Body() body: TagDto) {
    await WRITES[write](this.inTransaction, this.txHost.tx, body.tag);
    return { ok: true };
  }

  /** A service that catches the refusal and answers as if all went well. */
  @Post('swallowed')
  @Idempotent()
  async swallowed(@Body() body: TagDto) {
    await this.inTransaction.save({ tag: body.tag, note: 'in the transaction' });
    await this.notes.save({ tag: body.tag, note: 'outside' }).catch(() => undefined);
    return { ok: true };
  }

  @Post('warn')
  @Idempotent({ writeGuard: 'warn' })
  async warn(@Body() body: TagDto) {
    await this.notes.save({ tag: body.tag, note: 'outside, warned' });
    return { ok: true };
  }

  @Post('warn-raw')
  @Idempotent({ writeGuard: 'warn' })
  async warnRaw(@Body() body: TagDto) {
    await this.dataSource.query(
      `INSERT INTO guard_test_notes (tag, note) VALUES ($1, 'raw, warned')`,
      [body.tag],
    );
    return { ok: true };
  }

  /** One outside write, whose statements are a read, raw SQL and an insert: one report. */
  @Post('warn-tree')
  @Idempotent({ writeGuard: 'warn' })
  async warnTree(@Body() body: TagDto) {
    const categories = this.dataSource.manager.getTreeRepository(GuardCategory);
    const root = await categories.findOneByOrFail({ tag: 'root' });
    await categories.save(categories.create({ tag: body.tag, parent: root }));
    return { ok: true };
  }

  /** Two outside writes on one runner: an entity save, then raw SQL on another table. */
  @Post('warn-save-then-raw')
  @Idempotent({ writeGuard: 'warn' })
  async warnSaveThenRaw(@Body() body: TagDto) {
    await this.dataSource.transaction(async (manager) => {
      await manager.save(GuardNote, { tag: body.tag, note: 'saved outside' });
      await manager.query(
        `INSERT INTO library_test_effects (route, tag) VALUES ('warn-save-then-raw', $1)`,
        [body.tag],
      );
    });
    return { ok: true };
  }

  /** Reads outside the transaction, one of them cached (TypeORM writes its cache table), pass. */
  @Post('reads')
  @Idempotent()
  async reads(@Body() body: TagDto) {
    const cached = await this.notes.find({ where: { tag: body.tag }, cache: 60_000 });
    const [{ count }] = await this.dataSource.query<{ count: string }[]>(
      `WITH mine AS (SELECT * FROM guard_test_notes WHERE tag = $1) SELECT count(*) FROM mine`,
      [body.tag],
    );
    await this.inTransaction.save({ tag: body.tag, note: `read ${cached.length} and ${count}` });
    return { ok: true };
  }

  @Post('off')
  @Idempotent({ writeGuard: 'off' })
  async off(@Body() body: TagDto) {
    await this.notes.save({ tag: body.tag, note: 'outside, unguarded' });
    return { ok: true };
  }

  /** Phased: a step's write through `txHost.tx` passes; one outside any step is refused. */
  @Post('phased')
  @Idempotent({ phased: true })
  async phased(@Body() body: TagDto, @Phases() phases: IdempotentPhases) {
    await phases.transaction('noted', () =>
      this.inTransaction.save({ tag: body.tag, note: 'in the step' }),
    );
    await this.notes.save({ tag: body.tag, note: 'between steps' });
    return { ok: true };
  }

  @Post('phased-inside')
  @Idempotent({ phased: true })
  async phasedInside(@Body() body: TagDto, @Phases() phases: IdempotentPhases) {
    await phases.transaction('first', () =>
      this.inTransaction.save({ tag: body.tag, note: 'first step' }),
    );
    await phases.transaction('second', () =>
      this.inTransaction.update({ tag: body.tag }, { note: 'second step' }),
    );
    return { ok: true };
  }
}

/** Not idempotent: writes through the repository are nobody's business here. */
@Controller('plain-notes')
class PlainController {
  constructor(@InjectRepository(GuardNote) private readonly notes: Repository<GuardNote>) {}

  @Post()
  async create(@Body() body: TagDto) {
    await this.notes.save({ tag: body.tag, note: 'plain' });
    return { ok: true };
  }
}

function listen(): { events: IdempotencyEvent[]; stop(): void } {
  const events: IdempotencyEvent[] = [];
  const listener = (message: unknown) => {
    const event = message as IdempotencyEvent;
    if (event.type === 'write_outside_transaction') events.push(event);
  };
  subscribe(IDEMPOTENCY_DIAGNOSTICS_CHANNEL, listener);
  return { events, stop: () => unsubscribe(IDEMPOTENCY_DIAGNOSTICS_CHANNEL, listener) };
}

describe('write guard (writes outside the request transaction)', () => {
  let app: INestApplication;
  let dataSource: DataSource;
  let channel: ReturnType<typeof listen>;

  beforeAll(async () => {
    ({ app, dataSource } = await createLibraryApp(
      IdempotencyModule.forRoot(),
      undefined,
      { entities: [GuardNote, GuardCategory], cache: true },
      { controllers: [GuardController, PlainController] },
      [TypeOrmModule.forFeature([GuardNote])],
    ));
    await dataSource.queryResultCache?.synchronize();
    await dataSource.query(`DROP TABLE IF EXISTS guard_test_categories`);
    await dataSource.query(`CREATE TABLE guard_test_categories (
      id serial PRIMARY KEY, tag text NOT NULL,
      nsleft integer NOT NULL DEFAULT 1, nsright integer NOT NULL DEFAULT 2,
      "parentId" integer REFERENCES guard_test_categories (id))`);
    const categories = dataSource.getTreeRepository(GuardCategory);
    await categories.save(categories.create({ tag: 'root' }));
    channel = listen();
  });
  afterAll(async () => {
    channel.stop();
    await dataSource.query('DROP TABLE IF EXISTS "query-result-cache"');
    await dataSource.query('DROP TABLE IF EXISTS guard_test_categories');
    await app.close();
  });
  afterEach(() => jest.restoreAllMocks());

  const notes = (tag: string) =>
    dataSource.query<{ note: string; deleted: boolean }[]>(
      `SELECT note, deleted_at IS NOT NULL AS deleted FROM guard_test_notes WHERE tag = $1
         ORDER BY id`,
      [tag],
    );
  const keyRows = async (key: string) =>
    (await dataSource.query('SELECT 1 FROM idempotency_keys WHERE idem_key = $1', [key])).length;
  const post = (path: string, key: string, tag: string) =>
    request(app.getHttpServer()).post(path).set('idempotency-key', key).send({ tag });
  /** The one guard event since `seen`: a write of GuardNote on an atomic route. */
  const expectOneGuardEvent = (seen: number, scope: string) =>
    expect(channel.events.slice(seen)).toEqual([
      { type: 'write_outside_transaction', scope, mode: 'atomic', entity: 'GuardNote' },
    ]);
  const expectLogged = (spy: jest.SpyInstance, text: string) =>
    expect(spy.mock.calls.map(([message]) => String(message))).toEqual(
      expect.arrayContaining([expect.stringContaining(text)]),
    );

  describe.each(Object.keys(WRITES))(
    '%s through the injected repository or DataSource',
    (write) => {
      it('is refused before it reaches the table: 500 problem naming the entity, nothing commits, no key', async () => {
        const tag = randomUUID();
        const key = randomUUID();
        if (ON_EXISTING_ROW.has(write))
          await dataSource.query(`INSERT INTO guard_test_notes (tag, note) VALUES ($1, 'before')`, [
            tag,
          ]);
        const errors = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
        const seen = channel.events.length;

        const response = await post(`/guard/outside/${write}`, key, tag);

        expect(response.status).toBe(500);
        expect(response.headers['content-type']).toContain('application/problem+json');
        const problem = JSON.parse(response.text) as { type: string; detail: string };
        expect(problem.type).toBe(IdempotencyProblemType.writeOutsideTransaction);
        expect(problem.detail).toContain('GuardNote');
        expect(problem.detail).toContain('POST /guard/outside/:write');
        // Neither the outside write nor the transaction's: the row as it was, or no row.
        expect(await notes(tag)).toEqual(
          ON_EXISTING_ROW.has(write) ? [{ note: 'before', deleted: false }] : [],
        );
        expect(await keyRows(key)).toBe(0);
        expectOneGuardEvent(seen, 'POST /guard/outside/:write');
        expectLogged(errors, 'of GuardNote outside');
      });
    },
  );

  it.each(Object.keys(WRITES))('lets %s through txHost.tx pass', async (write) => {
    const tag = randomUUID();
    if (ON_EXISTING_ROW.has(write))
      await dataSource.query(`INSERT INTO guard_test_notes (tag, note) VALUES ($1, 'before')`, [
        tag,
      ]);
    const response = await post(`/guard/inside/${write}`, randomUUID(), tag);
    expect(response.status).toBe(201);
    const expected: Record<string, { note: string; deleted: boolean }[]> = {
      save: [{ note: 'saved', deleted: false }],
      insert: [{ note: 'inserted', deleted: false }],
      update: [{ note: 'updated', deleted: false }],
      delete: [],
      remove: [],
      'soft-remove': [{ note: 'before', deleted: true }],
      'soft-delete': [{ note: 'before', deleted: true }],
      'query-builder-insert': [{ note: 'built', deleted: false }],
      'manager-save': [{ note: 'manager', deleted: false }],
      'raw-insert': [{ note: 'raw', deleted: false }],
      'raw-update-with-schema': [{ note: 'raw', deleted: false }],
      'raw-delete-after-comment': [],
      'insert-select': [
        { note: 'before', deleted: false },
        { note: 'selected', deleted: false },
      ],
      'update-by-table-name': [{ note: 'named', deleted: false }],
    };
    expect(await notes(tag)).toEqual(expected[write]);
  });

  it('fails the request even when the service swallows the refusal; the retry fails the same way', async () => {
    const tag = randomUUID();
    const key = randomUUID();
    for (let attempt = 0; attempt < 2; attempt++) {
      const response = await post('/guard/swallowed', key, tag);
      expect(response.status).toBe(500);
      expect(JSON.parse(response.text).type).toBe(IdempotencyProblemType.writeOutsideTransaction);
    }
    expect(await notes(tag)).toEqual([]);
    expect(await keyRows(key)).toBe(0);
  });

  it("with 'warn' lets the write through, and warns once per route and entity", async () => {
    const warnings = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const seen = channel.events.length;
    const tags = [randomUUID(), randomUUID()];
    for (const tag of tags) expect((await post('/guard/warn', randomUUID(), tag)).status).toBe(201);
    for (const tag of tags)
      expect(await notes(tag)).toEqual([{ note: 'outside, warned', deleted: false }]);
    const guardWarnings = warnings.mock.calls.filter(([message]) =>
      String(message).includes('of GuardNote outside'),
    );
    expect(guardWarnings).toHaveLength(1);
    expect(String(guardWarnings[0][0])).toContain('POST /guard/warn');
    expect(channel.events.slice(seen).map((e) => e.scope)).toEqual([
      'POST /guard/warn',
      'POST /guard/warn',
    ]);
  });

  it("with 'warn' reports a raw write once and lets it through", async () => {
    const warnings = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const seen = channel.events.length;
    const tag = randomUUID();
    expect((await post('/guard/warn-raw', randomUUID(), tag)).status).toBe(201);
    expect(await notes(tag)).toEqual([{ note: 'raw, warned', deleted: false }]);
    expectOneGuardEvent(seen, 'POST /guard/warn-raw');
    expectLogged(warnings, 'insert of GuardNote outside');
  });

  it("with 'warn' reports a save into a nested-set tree once, though TypeORM adds raw SQL to it", async () => {
    jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const seen = channel.events.length;
    const tag = randomUUID();
    expect((await post('/guard/warn-tree', randomUUID(), tag)).status).toBe(201);
    expect(
      await dataSource.query('SELECT 1 FROM guard_test_categories WHERE tag = $1', [tag]),
    ).toHaveLength(1);
    expect(channel.events.slice(seen).map((event) => event.entity)).toEqual(['GuardCategory']);
  });

  it("with 'warn' reports a raw write that follows an entity write on the same runner", async () => {
    const warnings = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const seen = channel.events.length;
    const tag = randomUUID();
    expect((await post('/guard/warn-save-then-raw', randomUUID(), tag)).status).toBe(201);
    expect(
      await dataSource.query('SELECT 1 FROM library_test_effects WHERE tag = $1', [tag]),
    ).toHaveLength(1);
    expect(channel.events.slice(seen).map((event) => event.entity)).toEqual([
      'GuardNote',
      'library_test_effects',
    ]);
    expectLogged(warnings, 'of library_test_effects outside');
  });

  it('lets reads outside the transaction pass, a cached one (TypeORM writes its cache) too', async () => {
    const tag = randomUUID();
    await dataSource.query(`INSERT INTO guard_test_notes (tag, note) VALUES ($1, 'before')`, [tag]);
    const seen = channel.events.length;
    const response = await post('/guard/reads', randomUUID(), tag);
    expect(response.status).toBe(201);
    expect(await notes(tag)).toEqual([
      { note: 'before', deleted: false },
      { note: 'read 1 and 1', deleted: false },
    ]);
    expect(channel.events.length).toBe(seen);
    const [{ cached }] = await dataSource.query<{ cached: number }[]>(
      `SELECT count(*)::int AS cached FROM "query-result-cache"`,
    );
    expect(cached).toBeGreaterThan(0);
  });

  it("with 'off' on the route does not watch it", async () => {
    const tag = randomUUID();
    const seen = channel.events.length;
    expect((await post('/guard/off', randomUUID(), tag)).status).toBe(201);
    expect(await notes(tag)).toEqual([{ note: 'outside, unguarded', deleted: false }]);
    expect(channel.events.length).toBe(seen);
  });

  it('leaves routes without @Idempotent() alone', async () => {
    const tag = randomUUID();
    const response = await request(app.getHttpServer()).post('/plain-notes').send({ tag });
    expect(response.status).toBe(201);
    expect(await notes(tag)).toEqual([{ note: 'plain', deleted: false }]);
  });

  describe('phased mode', () => {
    it("lets a step's writes through txHost.tx pass", async () => {
      const tag = randomUUID();
      expect((await post('/guard/phased-inside', randomUUID(), tag)).status).toBe(201);
      expect(await notes(tag)).toEqual([{ note: 'second step', deleted: false }]);
    });

    it('refuses a write outside any step; the committed step stays, the outside write never lands', async () => {
      const tag = randomUUID();
      const key = randomUUID();
      const seen = channel.events.length;
      const response = await post('/guard/phased', key, tag);
      expect(response.status).toBe(500);
      expect(JSON.parse(response.text).type).toBe(IdempotencyProblemType.writeOutsideTransaction);
      expect(await notes(tag)).toEqual([{ note: 'in the step', deleted: false }]);
      expect(channel.events.slice(seen)).toEqual([
        expect.objectContaining({
          mode: 'phased',
          entity: 'GuardNote',
          scope: 'POST /guard/phased',
        }),
      ]);
      // The lease was released, its recovery point kept: the retry resumes and fails the same way.
      const [row] = await dataSource.query<{ recovery_point: string; status: string }[]>(
        'SELECT recovery_point, status FROM idempotency_keys WHERE idem_key = $1',
        [key],
      );
      expect(row).toEqual(expect.objectContaining({ recovery_point: 'noted' }));
    });
  });
});

describe('write guard off for the module', () => {
  let app: INestApplication;
  let dataSource: DataSource;

  beforeAll(async () => {
    ({ app, dataSource } = await createLibraryApp(
      IdempotencyModule.forRoot({ writeGuard: 'off' }),
      undefined,
      { entities: [GuardNote] },
      { controllers: [GuardController] },
      [TypeOrmModule.forFeature([GuardNote])],
    ));
  });
  afterAll(() => app.close());

  it('lets the write outside the transaction commit (the classic bug, unguarded)', async () => {
    const tag = randomUUID();
    const key = randomUUID();
    const response = await request(app.getHttpServer())
      .post('/guard/outside/save')
      .set('idempotency-key', key)
      .send({ tag });
    expect(response.status).toBe(201);
    expect(
      await dataSource.query('SELECT note FROM guard_test_notes WHERE tag = $1 ORDER BY id', [tag]),
    ).toEqual([{ note: 'in the transaction' }, { note: 'saved' }]);
  });

  it('rejects an unknown mode at start-up, naming the option', () => {
    expect(() => Idempotent({ writeGuard: 'loud' as never })).toThrow(
      "@Idempotent(): writeGuard must be 'throw', 'warn' or 'off', got the string \"loud\"",
    );
  });
});
