import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { IdempotencyProblemType } from 'nestjs-pg-idempotency';
import { setUpOpenApi } from '../apps/payments-api/src/app.setup';
import { createTestApp } from './support/test-app';

interface Operation {
  parameters?: {
    name: string;
    in: string;
    required?: boolean;
    description?: string;
    schema?: { maxLength?: number };
  }[];
  responses: Record<
    string,
    { content?: Record<string, unknown>; headers?: Record<string, unknown> }
  >;
}

describe('OpenAPI at /docs', () => {
  let app: INestApplication;
  let paths: Record<string, Record<string, Operation>>;
  let securitySchemes: Record<string, { bearerFormat?: string }>;
  let schemas: Record<string, { properties?: Record<string, unknown>; required?: string[] }>;

  beforeAll(async () => {
    app = await createTestApp({}, (nest) => setUpOpenApi(nest));
    const res = await request(app.getHttpServer()).get('/docs-json').expect(200);
    paths = res.body.paths;
    securitySchemes = res.body.components.securitySchemes;
    schemas = res.body.components.schemas;
  });
  afterAll(() => app.close());

  it('documents the request bodies field by field, and the answers of the payments and the reads', () => {
    expect(schemas.CreateOrderDto).toMatchObject({
      properties: {
        customerId: { type: 'string', minLength: 1, maxLength: 64 },
        amountCents: { type: 'integer', minimum: 1, maximum: 100_000_000 },
        currency: { enum: ['usd', 'eur', 'gbp'], default: 'usd' },
        reference: { type: 'string' },
      },
      required: ['customerId', 'amountCents'],
    });
    expect(schemas.CreatePaymentDto).toMatchObject({
      properties: { orderId: { format: 'uuid' }, amountCents: { type: 'integer' } },
      required: ['orderId', 'amountCents'],
    });
    const pay = paths['/v1/payments'].post.responses;
    expect(pay['201'].content).toHaveProperty([
      'application/json',
      'schema',
      'properties',
      'status',
    ]);
    for (const status of ['402', '404'])
      expect(pay[status].content).toHaveProperty(['application/problem+json']);
    for (const path of ['/v1/orders/{id}', '/v1/payments/{id}']) {
      expect(paths[path].get.responses['200'].content).toHaveProperty(['application/json']);
      expect(paths[path].get.responses['404'].content).toHaveProperty(['application/problem+json']);
    }
  });

  it.each([['/v1/orders'], ['/v1/payments']])(
    'documents the key header and the 400, 409, 422, 503 and 500 problems of POST %s',
    (path) => {
      const post = paths[path].post;
      expect(post.parameters).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ name: 'Idempotency-Key', in: 'header', required: true }),
        ]),
      );
      for (const status of ['400', '409', '422', '503', '500']) {
        expect(post.responses[status].content).toHaveProperty(['application/problem+json']);
      }
      expect(post.responses['409'].headers).toHaveProperty('Retry-After');
      expect(post.responses['503'].headers).toHaveProperty('Retry-After');
      expect(post.responses['400'].content).toHaveProperty(
        ['application/problem+json', 'schema', 'properties', 'type', 'enum'],
        expect.arrayContaining([IdempotencyProblemType.unfingerprintableRequest]),
      );
      expect(post.responses['500'].content).toHaveProperty(
        ['application/problem+json', 'schema', 'properties', 'type', 'enum'],
        [
          IdempotencyProblemType.responseTooLarge,
          IdempotencyProblemType.writeOutsideTransaction,
          IdempotencyProblemType.sealedRecordUnreadable,
        ],
      );
    },
  );

  it("gives the key's length in the text, and the header's in the schema (a quoted key's quotes and escapes do not count)", () => {
    const header = paths['/v1/orders'].post.parameters?.find((p) => p.name === 'Idempotency-Key');
    expect(header?.schema?.maxLength).toBe(2 * 255 + 2);
    expect(header?.description).toContain('1 to 255 printable ASCII characters');
  });

  it('documents the 201 of POST /v1/orders with its body and Location, and the 401 of every guarded route', () => {
    const created = paths['/v1/orders'].post.responses['201'];
    expect(created.content).toHaveProperty([
      'application/json',
      'schema',
      'properties',
      'amountCents',
    ]);
    expect(created.headers).toHaveProperty('Location');
    for (const [path, method] of [
      ['/v1/orders', 'post'],
      ['/v1/orders', 'get'],
      ['/v1/payments', 'post'],
    ]) {
      expect(paths[path][method].responses['401'].content).toHaveProperty([
        'application/problem+json',
      ]);
    }
    expect(securitySchemes.bearer.bearerFormat).not.toBe('JWT');
  });

  it('leaves routes without @Idempotent() alone', () => {
    const get = paths['/v1/orders'].get;
    expect((get.parameters ?? []).map((p) => p.name)).not.toContain('Idempotency-Key');
    expect(get.responses['409']).toBeUndefined();
  });

  it('serves the docs page', async () => {
    const res = await request(app.getHttpServer()).get('/docs').expect(200);
    expect(res.text).toContain('swagger');
  });
});
