import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { TestDatabase } from './support/database';
import { ACME, uniqueCustomer, uniqueKey } from './support/http';
import { AppProcess } from './support/app-process';
import { createTestApp, databaseUrl } from './support/test-app';

const CREATE = `mutation Create($input: CreateOrderInput!) {
  createOrder(input: $input) { id customerId amountCents currency reference status }
}`;

const TWO_ALIASED = `mutation Two($a: CreateOrderInput!, $b: CreateOrderInput!) {
  first: createOrder(input: $a) { id amountCents }
  second: createOrder(input: $b) { id amountCents }
}`;

interface GraphqlBody {
  data?: Record<string, { id: string } | null> | null;
  errors?: { message: string; extensions: Record<string, unknown> }[];
}

describe('POST /graphql createOrder (atomic idempotency, in process, express)', () => {
  let app: INestApplication;
  let db: TestDatabase;

  beforeAll(async () => {
    app = await createTestApp();
    db = new TestDatabase();
  });
  afterAll(async () => {
    await app.close();
    await db.close();
  });

  const graphql = (
    query: string,
    variables: Record<string, unknown>,
    headers: Record<string, string> = {},
  ) =>
    request(app.getHttpServer())
      .post('/graphql')
      .set('content-type', 'application/json')
      .set({ authorization: ACME.authorization, ...headers })
      .send(JSON.stringify({ query, variables }));

  const body = (res: { text: string }) => JSON.parse(res.text) as GraphqlBody;

  it('creates one order and replays a byte-identical body', async () => {
    const key = uniqueKey();
    const customerId = uniqueCustomer();
    const variables = { input: { customerId, amountCents: 4999, currency: 'eur' } };
    const first = await graphql(CREATE, variables, { 'idempotency-key': key });
    // Same document with other whitespace: the same operation.
    const second = await graphql(CREATE.replace(/\n\s*/g, ' '), variables, {
      'idempotency-key': key,
    });

    expect(first.status).toBe(200);
    expect(body(first).errors).toBeUndefined();
    expect(body(first).data?.createOrder).toMatchObject({ customerId, amountCents: 4999 });
    expect(second.text).toBe(first.text);
    const orders = await db.orders('acme', customerId);
    expect(orders).toHaveLength(1);
    expect(orders[0].id).toBe(body(first).data?.createOrder?.id);
    const [row] = await db.keys('acme', key);
    expect(row).toMatchObject({
      endpoint: 'GRAPHQL Mutation.createOrder #1',
      status: 'completed',
      response_code: 200,
    });
  });

  it('creates one order for 20 parallel duplicates, all answered alike', async () => {
    const key = uniqueKey();
    const customerId = uniqueCustomer();
    const variables = { input: { customerId, amountCents: 700 } };
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => graphql(CREATE, variables, { 'idempotency-key': key })),
    );

    const created = answers.filter((res) => body(res).data?.createOrder);
    const inUse = answers.filter(
      (res) => body(res).errors?.[0]?.extensions.code === 'IDEMPOTENCY_KEY_IN_USE',
    );
    expect(created.length + inUse.length).toBe(20);
    expect(new Set(created.map((res) => res.text)).size).toBe(1);
    for (const res of inUse) expect(body(res).errors?.[0]?.extensions.retryAfter).toBe(1);
    expect(await db.orders('acme', customerId)).toHaveLength(1);
  });

  it('refuses the key with other variables (IDEMPOTENCY_KEY_REUSED) and creates nothing more', async () => {
    const key = uniqueKey();
    const customerId = uniqueCustomer();
    await graphql(CREATE, { input: { customerId, amountCents: 100 } }, { 'idempotency-key': key });
    const reused = await graphql(
      CREATE,
      { input: { customerId, amountCents: 200 } },
      { 'idempotency-key': key },
    );

    expect(body(reused).data).toBeNull();
    expect(body(reused).errors?.[0]?.extensions.code).toBe('IDEMPOTENCY_KEY_REUSED');
    const orders = await db.orders('acme', customerId);
    expect(orders.map((order) => order.amount_cents)).toEqual([100]);
  });

  it('requires the key (IDEMPOTENCY_KEY_REQUIRED) and creates no order without it', async () => {
    const customerId = uniqueCustomer();
    const res = await graphql(CREATE, { input: { customerId, amountCents: 100 } });

    expect(body(res).errors?.[0]?.extensions.code).toBe('IDEMPOTENCY_KEY_REQUIRED');
    expect(await db.orders('acme', customerId)).toHaveLength(0);
  });

  it('refuses a malformed key (IDEMPOTENCY_KEY_INVALID)', async () => {
    const customerId = uniqueCustomer();
    const res = await graphql(
      CREATE,
      { input: { customerId, amountCents: 100 } },
      { 'idempotency-key': 'x'.repeat(300) },
    );

    expect(body(res).errors?.[0]?.extensions.code).toBe('IDEMPOTENCY_KEY_INVALID');
    expect(await db.orders('acme', customerId)).toHaveLength(0);
  });

  it('stores INSUFFICIENT_FUNDS: every replay is the same error, and no order exists', async () => {
    const key = uniqueKey();
    const customerId = uniqueCustomer();
    const variables = { input: { customerId, amountCents: 2_000_000 } };
    const first = await graphql(CREATE, variables, { 'idempotency-key': key });
    const second = await graphql(CREATE, variables, { 'idempotency-key': key });
    const third = await graphql(CREATE, variables, { 'idempotency-key': key });

    expect(body(first).data).toBeNull();
    expect(body(first).errors).toEqual([
      expect.objectContaining({
        message: 'The order exceeds the credit limit of 1000000 cents.',
        path: ['createOrder'],
        extensions: { code: 'INSUFFICIENT_FUNDS' },
      }),
    ]);
    expect(second.text).toBe(first.text);
    expect(third.text).toBe(first.text);
    expect(await db.orders('acme', customerId)).toHaveLength(0);
    const [row] = await db.keys('acme', key);
    expect(row).toMatchObject({ status: 'completed', response_code: 422 });
  });

  it('refuses a reference the tenant used already as DUPLICATE_REFERENCE, not stored, like POST /v1/orders', async () => {
    const customerId = uniqueCustomer();
    const reference = `ref-${uniqueKey()}`;
    const variables = { input: { customerId, amountCents: 500, reference } };
    const created = await graphql(CREATE, variables, { 'idempotency-key': uniqueKey() });
    expect(body(created).errors).toBeUndefined();
    const key = uniqueKey();
    const duplicate = await graphql(CREATE, variables, { 'idempotency-key': key });
    expect(body(duplicate).data).toBeNull();
    expect(body(duplicate).errors).toEqual([
      expect.objectContaining({
        path: ['createOrder'],
        extensions: expect.objectContaining({ code: 'DUPLICATE_REFERENCE' }),
      }),
    ]);
    expect(await db.orders('acme', customerId)).toHaveLength(1);
    // Released, as a 409 is on REST: no record under the key.
    expect(await db.keys('acme', key)).toEqual([]);
  });

  it('validates the input like POST /v1/orders, and creates nothing', async () => {
    const key = uniqueKey();
    const customerId = uniqueCustomer();
    const res = await graphql(
      CREATE,
      { input: { customerId, amountCents: 0, currency: 'chf' } },
      { 'idempotency-key': key },
    );

    expect(body(res).errors?.[0]?.extensions).toMatchObject({ code: 'BAD_REQUEST', status: 400 });
    expect(await db.orders('acme', customerId)).toHaveLength(0);
  });

  it('makes two aliased createOrder fields two records and two orders, replayed unchanged', async () => {
    const key = uniqueKey();
    const customerId = uniqueCustomer();
    const variables = {
      a: { customerId, amountCents: 111 },
      b: { customerId, amountCents: 222 },
    };
    const first = await graphql(TWO_ALIASED, variables, { 'idempotency-key': key });
    const replay = await graphql(TWO_ALIASED, variables, { 'idempotency-key': key });

    expect(body(first).errors).toBeUndefined();
    expect(body(first).data?.first?.id).not.toBe(body(first).data?.second?.id);
    expect(replay.text).toBe(first.text);
    const orders = await db.orders('acme', customerId);
    expect(orders.map((order) => order.amount_cents).sort()).toEqual([111, 222]);
    const rows = await db.keys('acme', key);
    expect(rows.map((row) => row.endpoint).sort()).toEqual([
      'GRAPHQL Mutation.createOrder #1',
      'GRAPHQL Mutation.createOrder #2',
    ]);
  });

  it('keeps REST and GraphQL apart: the same key makes two orders', async () => {
    const key = uniqueKey();
    const customerId = uniqueCustomer();
    const rest = await request(app.getHttpServer())
      .post('/v1/orders')
      .set({ authorization: ACME.authorization, 'idempotency-key': key })
      .send({ customerId, amountCents: 300 });
    const gql = await graphql(
      CREATE,
      { input: { customerId, amountCents: 300 } },
      { 'idempotency-key': key },
    );

    expect(rest.status).toBe(201);
    expect(body(gql).data?.createOrder?.id).not.toBe((rest.body as { id: string }).id);
    expect(await db.orders('acme', customerId)).toHaveLength(2);
  });

  it('asks for the API key on GraphQL too', async () => {
    const customerId = uniqueCustomer();
    const res = await graphql(
      CREATE,
      { input: { customerId, amountCents: 100 } },
      { authorization: 'Bearer nope', 'idempotency-key': uniqueKey() },
    );

    expect(body(res).errors?.[0]?.extensions.code).toBe('UNAUTHENTICATED');
    expect(await db.orders('acme', customerId)).toHaveLength(0);
  });
});

describe('POST /graphql createOrder with IDEMPOTENCY_MAX_RESPONSE_BYTES=64', () => {
  let app: INestApplication;
  let db: TestDatabase;

  beforeAll(async () => {
    app = await createTestApp({ maxResponseBytes: 64 });
    db = new TestDatabase();
  });
  afterAll(async () => {
    await app.close();
    await db.close();
  });

  it('answers IDEMPOTENCY_RESPONSE_TOO_LARGE, rolls the order back and keeps no key row', async () => {
    const key = uniqueKey();
    const customerId = uniqueCustomer();
    const res = await request(app.getHttpServer())
      .post('/graphql')
      .set({ authorization: ACME.authorization, 'idempotency-key': key })
      .send({ query: CREATE, variables: { input: { customerId, amountCents: 100 } } });

    expect(JSON.parse(res.text)).toMatchObject({
      data: null,
      errors: [{ extensions: { code: 'IDEMPOTENCY_RESPONSE_TOO_LARGE' } }],
    });
    expect(await db.orders('acme', customerId)).toHaveLength(0);
    expect(await db.keys('acme', key)).toHaveLength(0);
  });
});

describe('POST /graphql on the built demo (main.ts, real process)', () => {
  let app: AppProcess;
  let db: TestDatabase;

  beforeAll(async () => {
    app = await AppProcess.start();
    db = new TestDatabase();
  });
  afterAll(async () => {
    await app.stop();
    await db.close();
  });

  it('serves createOrder with the API key and the idempotency key, and replays it', async () => {
    const key = uniqueKey();
    const customerId = uniqueCustomer();
    const post = () =>
      fetch(`${app.url}/graphql`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: ACME.authorization,
          'idempotency-key': key,
        },
        body: JSON.stringify({
          query: CREATE,
          variables: { input: { customerId, amountCents: 5 } },
        }),
      }).then((res) => res.text());
    const first = await post();
    const replay = await post();

    expect(JSON.parse(first)).toMatchObject({ data: { createOrder: { customerId } } });
    expect(replay).toBe(first);
    expect(await db.orders('acme', customerId)).toHaveLength(1);
  });
});

describe('POST /graphql on the built demo with HTTP_ADAPTER=fastify', () => {
  let app: AppProcess;

  beforeAll(async () => {
    app = await AppProcess.start({ DATABASE_URL: databaseUrl(), HTTP_ADAPTER: 'fastify' });
  });
  afterAll(() => app.stop());

  it('is not mounted (GraphQL is served on Express only); REST still is', async () => {
    const graphql = await fetch(`${app.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: ACME.authorization },
      body: JSON.stringify({ query: '{ orders { id } }' }),
    });
    const rest = await fetch(`${app.url}/v1/orders`, {
      headers: { authorization: ACME.authorization },
    });

    expect(graphql.status).toBe(404);
    expect(rest.status).toBe(200);
  });
});
