import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { setUpOpenApi } from '../apps/payments-api/src/app.setup';
import { createTestApp } from './support/test-app';

interface Operation {
  parameters?: { name: string; in: string; required?: boolean }[];
  responses: Record<string, { content?: Record<string, unknown>; headers?: Record<string, unknown> }>;
}

describe('OpenAPI at /docs', () => {
  let app: INestApplication;
  let paths: Record<string, Record<string, Operation>>;

  beforeAll(async () => {
    app = await createTestApp({}, (nest) => setUpOpenApi(nest));
    const res = await request(app.getHttpServer()).get('/docs-json').expect(200);
    paths = res.body.paths;
  });
  afterAll(() => app.close());

  it.each([['/v1/orders'], ['/v1/payments']])('documents the key header and the 400, 409 and 422 problems of POST %s', (path) => {
    const post = paths[path].post;
    expect(post.parameters).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'Idempotency-Key', in: 'header', required: true })]),
    );
    for (const status of ['400', '409', '422']) {
      expect(post.responses[status].content).toHaveProperty(['application/problem+json']);
    }
    expect(post.responses['409'].headers).toHaveProperty('Retry-After');
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
