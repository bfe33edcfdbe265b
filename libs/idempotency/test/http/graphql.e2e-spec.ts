import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { type INestApplication, Injectable, Module } from '@nestjs/common';
import {
  Args,
  Field,
  GraphQLModule,
  ID,
  Int,
  Mutation,
  ObjectType,
  Parent,
  Query,
  ResolveField,
  Resolver,
} from '@nestjs/graphql';
import { Test } from '@nestjs/testing';
import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { randomUUID } from 'node:crypto';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { GraphQLError, GraphQLScalarType } from 'graphql';
import {
  defaultShouldStore,
  IDEMPOTENCY_DIAGNOSTICS_CHANNEL,
  type IdempotencyEvent,
  Idempotent,
  IdempotencyGraphQLErrorCode,
  IdempotencyModule,
} from 'nestjs-pg-idempotency';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { libraryInfrastructure } from '../support/library-infrastructure';
import { migrateTestDatabase } from '../support/migrations';
import { GuardNote } from './guard-note.entity';
import { TestDatabase } from '../support/test-database';

@ObjectType()
class Thing {
  @Field(() => ID)
  id: number;

  @Field(() => String)
  tag: string;

  @Field(() => Int)
  calls: number;
}

/** Thrown after an effect committed elsewhere: the policy below makes it final. */
class AfterEffectError extends Error {}

let resolverCalls = 0;

/**
 * A tiny resolver whose side effect is a row, written through the request's transaction.
 * `@Idempotent()` on the class too: its query and its resolved field must be left alone.
 */
@Injectable()
@Resolver(() => Thing)
@Idempotent()
class ThingsResolver {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly dataSource: DataSource,
  ) {}

  @Query(() => Int)
  things(): number {
    return resolverCalls;
  }

  /** Resolved inside the mutation's result, again on every replay (from the stored value). */
  @ResolveField(() => String)
  label(@Parent() thing: Thing): string {
    return `${thing.tag}#${thing.id}`;
  }

  @Mutation(() => Thing)
  @Idempotent()
  async makeThing(
    @Args('tag') tag: string,
    @Args('outcome', { type: () => String, nullable: true }) outcome?: string,
  ): Promise<Thing> {
    resolverCalls++;
    const [row] = await this.txHost.tx.query<{ id: number }[]>(
      `INSERT INTO library_test_effects (route, tag) VALUES ('graphql', $1) RETURNING id`,
      [tag],
    );
    if (outcome === 'refused')
      throw new GraphQLError('Out of stock', { extensions: { code: 'OUT_OF_STOCK', left: 0 } });
    if (outcome === 'transient') throw new Error('the warehouse did not answer');
    if (outcome === 'after-effect')
      throw new AfterEffectError('shipped, then the label printer died');
    if (outcome === 'internal')
      throw new GraphQLError('boom', { extensions: { code: 'INTERNAL_SERVER_ERROR' } });
    return { id: row.id, tag, calls: resolverCalls };
  }

  /** The classic bug on GraphQL: a write through the DataSource's manager, outside the mutation's transaction. */
  @Mutation(() => Thing)
  @Idempotent()
  async strayThing(@Args('tag') tag: string): Promise<Thing> {
    await this.txHost.tx.query(
      `INSERT INTO library_test_effects (route, tag) VALUES ('graphql', $1)`,
      [tag],
    );
    await this.dataSource.manager.insert(GuardNote, { tag, note: 'stray' });
    return { id: 0, tag, calls: 0 };
  }

  @Mutation(() => Thing)
  @Idempotent({ phased: true })
  async phasedThing(@Args('tag') tag: string): Promise<Thing> {
    await this.txHost.tx.query(
      `INSERT INTO library_test_effects (route, tag) VALUES ('graphql', $1)`,
      [tag],
    );
    return { id: 0, tag, calls: 0 };
  }
}

/** As an upload scalar's value: a promise of the file, read by the resolver. */
const Deferred = new GraphQLScalarType({
  name: 'Deferred',
  parseValue: (value) => Promise.resolve(value),
  serialize: (value) => value,
});

/** A BigInt scalar: amounts past Number.MAX_SAFE_INTEGER, as a decimal string on the wire. */
const BigIntAmount = new GraphQLScalarType({
  name: 'BigIntAmount',
  parseValue: (value) => BigInt(value as string),
  serialize: (value) => String(value),
});

@Injectable()
@Resolver()
class ScalarsResolver {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  @Mutation(() => String)
  @Idempotent()
  async attach(
    @Args('tag') tag: string,
    @Args('file', { type: () => Deferred }) file: Promise<unknown>,
  ): Promise<string> {
    await this.txHost.tx.query(
      `INSERT INTO library_test_effects (route, tag) VALUES ('graphql', $1)`,
      [`${tag}:${JSON.stringify(await file)}`],
    );
    return tag;
  }

  /** Its result as text: the stored result is JSON, which has no BigInt. */
  @Mutation(() => String)
  @Idempotent()
  async transfer(
    @Args('tag') tag: string,
    @Args('amount', { type: () => BigIntAmount }) amount: bigint,
  ): Promise<string> {
    await this.txHost.tx.query(
      `INSERT INTO library_test_effects (route, tag) VALUES ('graphql', $1)`,
      [tag],
    );
    return amount.toString();
  }
}

/** Two mutations in one key space of their own (the decorator's `scope` on the class). */
@Injectable()
@Resolver()
@Idempotent({ scope: 'ledger' })
class LedgerResolver {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  @Mutation(() => String)
  credit(@Args('tag') tag: string): Promise<string> {
    return this.book('credit', tag);
  }

  @Mutation(() => String)
  debit(@Args('tag') tag: string): Promise<string> {
    return this.book('debit', tag);
  }

  private async book(entry: string, tag: string): Promise<string> {
    await this.txHost.tx.query(`INSERT INTO library_test_effects (route, tag) VALUES ($1, $2)`, [
      `ledger-${entry}`,
      tag,
    ]);
    return `${entry} ${tag}`;
  }
}

@Module({ providers: [ThingsResolver, ScalarsResolver, LedgerResolver] })
class ThingsModule {}

const MAKE = `mutation Make($tag: String!, $outcome: String) {
  makeThing(tag: $tag, outcome: $outcome) { id tag calls label }
}`;

describe('@Idempotent() on a GraphQL mutation (library, Apollo on Express)', () => {
  let app: INestApplication;
  let db: TestDatabase;

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        ...libraryInfrastructure({ entities: [GuardNote] }),
        // Without the replay cache, every replay comes from the row.
        IdempotencyModule.forRoot({
          cleanup: false,
          replayCache: false,
          shouldStore: (status, error) =>
            error instanceof AfterEffectError || defaultShouldStore(status),
        }),
        graphqlModule(),
        ThingsModule,
      ],
    }).compile();
    app = moduleRef.createNestApplication({ logger: ['error', 'warn'] });
    await migrateTestDatabase(app.get(DataSource));
    await app.init();
    db = new TestDatabase();
  });
  afterAll(async () => {
    await app.close();
    await db.close();
  });

  const send = (query: string, variables: Record<string, unknown>, key?: string) =>
    request(app.getHttpServer())
      .post('/graphql')
      .set('content-type', 'application/json')
      .set(key ? { 'idempotency-key': key } : {})
      .send(JSON.stringify({ query, variables }));
  const effects = async (tag: string) =>
    (await db.query(`SELECT id FROM library_test_effects WHERE tag = $1`, [tag])).length;
  const keyRows = (key: string) =>
    db.query<{ endpoint: string; status: string; response_code: number }>(
      `SELECT endpoint, status, response_code FROM idempotency_keys WHERE idem_key = $1`,
      [key],
    );

  it('runs the resolver once and replays the same body', async () => {
    const tag = randomUUID();
    const key = randomUUID();
    const first = await send(MAKE, { tag }, key);
    const second = await send(MAKE, { tag }, key);

    expect(JSON.parse(first.text)).toMatchObject({ data: { makeThing: { tag } } });
    expect(second.text).toBe(first.text);
    expect(await effects(tag)).toBe(1);
    expect(await keyRows(key)).toEqual([
      {
        endpoint: 'GRAPHQL Mutation.makeThing #1',
        status: 'completed',
        response_code: 200,
      },
    ]);
  });

  it('stores a GraphQLError with a code: the same message and extensions every time, its writes rolled back', async () => {
    const tag = randomUUID();
    const key = randomUUID();
    const first = await send(MAKE, { tag, outcome: 'refused' }, key);
    const replay = await send(MAKE, { tag, outcome: 'refused' }, key);

    expect(JSON.parse(first.text)).toMatchObject({
      data: null,
      errors: [{ message: 'Out of stock', extensions: { code: 'OUT_OF_STOCK', left: 0 } }],
    });
    expect(replay.text).toBe(first.text);
    expect(await effects(tag)).toBe(0);
    expect(await keyRows(key)).toMatchObject([{ status: 'completed', response_code: 422 }]);
  });

  it('stores a plain error the policy marks final, as an internal error without its message', async () => {
    const tag = randomUUID();
    const key = randomUUID();
    const first = await send(MAKE, { tag, outcome: 'after-effect' }, key);
    const calls = resolverCalls;
    const replay = await send(MAKE, { tag, outcome: 'after-effect' }, key);
    expect(JSON.parse(first.text)).toMatchObject({
      data: null,
      errors: [{ message: 'Internal server error', extensions: { code: 'INTERNAL_SERVER_ERROR' } }],
    });
    expect(first.text).not.toContain('label printer');
    expect(replay.text).toBe(first.text);
    expect(resolverCalls).toBe(calls);
    expect(await effects(tag)).toBe(0);
    expect(await keyRows(key)).toMatchObject([{ status: 'completed', response_code: 500 }]);
  });

  it.each(['transient', 'internal'])(
    'releases the key on a %s error: no row, no effect, the retry runs again',
    async (outcome) => {
      const tag = randomUUID();
      const key = randomUUID();
      const failed = await send(MAKE, { tag, outcome }, key);

      expect(JSON.parse(failed.text)).toMatchObject({ data: null });
      expect(await keyRows(key)).toEqual([]);
      expect(await effects(tag)).toBe(0);
      const retried = await send(MAKE, { tag }, key);
      expect(JSON.parse(retried.text)).toMatchObject({ data: { makeThing: { tag } } });
      expect(await effects(tag)).toBe(1);
    },
  );

  it('fingerprints the operation, not its whitespace, and refuses other variables', async () => {
    const tag = randomUUID();
    const key = randomUUID();
    const first = await send(MAKE, { tag }, key);
    const spaced = await send(`\n\n  ${MAKE.replace(/ /g, '   ')}\n# a comment`, { tag }, key);
    const other = await send(MAKE, { tag: `${tag}-other` }, key);
    const named = await send(MAKE.replace('mutation Make', 'mutation Other'), { tag }, key);

    expect(spaced.text).toBe(first.text);
    for (const res of [other, named]) {
      expect(JSON.parse(res.text)).toMatchObject({
        data: null,
        errors: [{ extensions: { code: 'IDEMPOTENCY_KEY_REUSED' } }],
      });
    }
    expect(await effects(tag)).toBe(1);
    expect(await effects(`${tag}-other`)).toBe(0);
  });

  it('refuses a retry that renames the alias: the same record, another request, nothing run again', async () => {
    const tag = randomUUID();
    const key = randomUUID();
    const first = await send(MAKE, { tag }, key);
    const aliased = await send(MAKE.replace('makeThing(', 'made: makeThing('), { tag }, key);
    const spread = await send(
      `mutation Make($tag: String!, $outcome: String) { ...Made }
       fragment Made on Mutation { made: makeThing(tag: $tag, outcome: $outcome) { id tag } }`,
      { tag },
      key,
    );

    expect(JSON.parse(first.text)).toMatchObject({ data: { makeThing: { tag } } });
    for (const res of [aliased, spread]) {
      expect(JSON.parse(res.text)).toMatchObject({
        data: null,
        errors: [{ path: ['made'], extensions: { code: 'IDEMPOTENCY_KEY_REUSED' } }],
      });
    }
    expect(await effects(tag)).toBe(1);
    expect((await keyRows(key)).map((row) => row.endpoint)).toEqual([
      'GRAPHQL Mutation.makeThing #1',
    ]);
  });

  it('keeps two mutations of one decorator scope apart in one document: both run, both replay', async () => {
    const tag = randomUUID();
    const key = randomUUID();
    const ledger = `mutation Ledger($tag: String!) { credit(tag: $tag) debit(tag: $tag) }`;
    const first = await send(ledger, { tag }, key);
    const replay = await send(ledger, { tag }, key);

    expect(JSON.parse(first.text)).toEqual({
      data: { credit: `credit ${tag}`, debit: `debit ${tag}` },
    });
    expect(replay.text).toBe(first.text);
    const booked = await db.query<{ route: string }>(
      `SELECT route FROM library_test_effects WHERE tag = $1 ORDER BY route`,
      [tag],
    );
    expect(booked.map((row) => row.route)).toEqual(['ledger-credit', 'ledger-debit']);
    expect((await keyRows(key)).map((row) => row.endpoint).sort()).toEqual([
      'ledger Mutation.credit #1',
      'ledger Mutation.debit #1',
    ]);
  });

  it('refuses a variable whose content it cannot see (an upload scalar’s promise), before the resolver runs', async () => {
    const tag = randomUUID();
    const res = await send(
      'mutation Attach($tag: String!, $file: Deferred!) { attach(tag: $tag, file: $file) }',
      { tag, file: 'a.pdf' },
      randomUUID(),
    );
    expect(JSON.parse(res.text)).toMatchObject({
      errors: [{ extensions: { code: 'IDEMPOTENCY_REQUEST_UNFINGERPRINTABLE' } }],
    });
    expect(
      await db.query(`SELECT 1 FROM library_test_effects WHERE tag LIKE $1`, [`${tag}:%`]),
    ).toEqual([]);
  });

  it('fingerprints a BigInt scalar by its value: the same amount replays, another is refused', async () => {
    const tag = randomUUID();
    const key = randomUUID();
    const TRANSFER =
      'mutation Transfer($tag: String!, $amount: BigIntAmount!) { transfer(tag: $tag, amount: $amount) }';
    const first = await send(TRANSFER, { tag, amount: '12345678901234567890' }, key);
    const replay = await send(TRANSFER, { tag, amount: '12345678901234567890' }, key);
    const other = await send(TRANSFER, { tag, amount: '12345678901234567891' }, key);
    expect(JSON.parse(first.text)).toEqual({ data: { transfer: '12345678901234567890' } });
    expect(replay.text).toBe(first.text);
    expect(JSON.parse(other.text)).toMatchObject({
      errors: [{ extensions: { code: 'IDEMPOTENCY_KEY_REUSED' } }],
    });
    expect(await effects(tag)).toBe(1);
  });

  it('counts the fragments the operation uses, not those of other operations in the document', async () => {
    const tag = randomUUID();
    const key = randomUUID();
    const make = `mutation Make($tag: String!) { makeThing(tag: $tag) { ...Parts } }
      fragment Parts on Thing { id tag calls label }`;
    const other = `mutation Other { makeThing(tag: "other") { ...OtherParts } }
      fragment OtherParts on Thing { id }`;
    const post = (query: string) =>
      request(app.getHttpServer())
        .post('/graphql')
        .set({ 'content-type': 'application/json', 'idempotency-key': key })
        .send(JSON.stringify({ query, variables: { tag }, operationName: 'Make' }));
    const first = await post(make);
    const withOther = await post(`${other}\n${make}`);
    const partsChanged = await post(make.replace('calls label', 'label'));

    expect(withOther.text).toBe(first.text);
    expect(JSON.parse(partsChanged.text)).toMatchObject({
      errors: [{ extensions: { code: 'IDEMPOTENCY_KEY_REUSED' } }],
    });
    expect(await effects(tag)).toBe(1);
  });

  it('refuses the phased mode on a mutation, naming the resolver, and runs nothing', async () => {
    const tag = randomUUID();
    const key = randomUUID();
    const res = await send(`mutation { phasedThing(tag: "${tag}") { id } }`, {}, key);

    expect(JSON.parse(res.text)).toMatchObject({
      data: null,
      errors: [{ message: expect.stringContaining('ThingsResolver.phasedThing') as string }],
    });
    expect(await effects(tag)).toBe(0);
    expect(await keyRows(key)).toEqual([]);
  });

  it("refuses a write outside the mutation's transaction: nothing written, the key released", async () => {
    const tag = randomUUID();
    const key = randomUUID();
    // Aliased: the event's scope must not carry the client's alias (a label per alias).
    const mutation = 'mutation Stray($tag: String!) { mine: strayThing(tag: $tag) { id } }';
    const events: IdempotencyEvent[] = [];
    const listener = (message: unknown) => events.push(message as IdempotencyEvent);
    subscribe(IDEMPOTENCY_DIAGNOSTICS_CHANNEL, listener);
    let res: Awaited<ReturnType<typeof send>>;
    try {
      res = await send(mutation, { tag }, key);
    } finally {
      unsubscribe(IDEMPOTENCY_DIAGNOSTICS_CHANNEL, listener);
    }
    expect(events.find((event) => event.type === 'write_outside_transaction')).toMatchObject({
      scope: 'GRAPHQL Mutation.strayThing',
      entity: 'GuardNote',
    });
    expect(JSON.parse(res.text)).toMatchObject({
      data: null,
      errors: [
        {
          message: expect.stringContaining('GuardNote') as string,
          extensions: { code: IdempotencyGraphQLErrorCode.writeOutsideTransaction },
        },
      ],
    });
    expect(await effects(tag)).toBe(0);
    expect(await db.query('SELECT 1 FROM guard_test_notes WHERE tag = $1', [tag])).toEqual([]);
    expect(await keyRows(key)).toEqual([]);
  });

  it('leaves queries alone, key or not', async () => {
    const res = await send('{ things }', {});
    expect(JSON.parse(res.text)).toEqual({ data: { things: expect.any(Number) } });
  });
});

function graphqlModule() {
  return GraphQLModule.forRoot<ApolloDriverConfig>({
    driver: ApolloDriver,
    autoSchemaFile: true,
    // Interceptors on @ResolveField() too: the library must still leave them alone.
    fieldResolverEnhancers: ['interceptors'],
    // A stack trace differs on every answer: replayed errors must be the same bytes.
    includeStacktraceInErrorResponses: false,
  });
}
