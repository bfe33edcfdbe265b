import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { TestDatabase } from './support/database';
import { ACME, uniqueCustomer, uniqueKey } from './support/http';
import { createTestApp } from './support/test-app';

/** The value of one Prometheus sample, e.g. `idempotency_requests_total{scope="…",outcome="…"}`. */
function sample(text: string, name: string, labels: Record<string, string>): number {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const labelText = line.slice(name.length + 1, line.indexOf('}'));
    const have = labelText.split(',');
    if (wanted.every((w) => have.includes(w))) return Number(line.slice(line.indexOf('}') + 1));
  }
  return 0;
}

describe('GET /metrics (the onEvent hook, in Prometheus text format)', () => {
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

  it('counts claims, replays, mismatches, rejected keys (under their route scope) and stored failures, with durations', async () => {
    const server = app.getHttpServer();
    const key = uniqueKey();
    const customerId = uniqueCustomer();
    const post = (body: object, idemKey?: string) =>
      request(server)
        .post('/v1/orders')
        .set('authorization', ACME.authorization)
        .set(idemKey ? { 'idempotency-key': idemKey } : {})
        .send(body);

    await post({ customerId, amountCents: 100 }, key).expect(201);
    await post({ customerId, amountCents: 100 }, key).expect(201);
    await post({ customerId, amountCents: 101 }, key).expect(422);
    await post({ customerId, amountCents: 100 }).expect(400);
    await post({ customerId, amountCents: 2_000_000 }, uniqueKey()).expect(422);
    expect(await db.orders('acme', customerId)).toHaveLength(1);

    const res = await request(server).get('/metrics').expect(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    const scope = { scope: 'POST /v1/orders' };
    expect(sample(res.text, 'idempotency_requests_total', { ...scope, outcome: 'completed' })).toBe(
      1,
    );
    expect(sample(res.text, 'idempotency_requests_total', { ...scope, outcome: 'replayed' })).toBe(
      1,
    );
    expect(
      sample(res.text, 'idempotency_requests_total', { ...scope, outcome: 'fingerprint_mismatch' }),
    ).toBe(1);
    expect(
      sample(res.text, 'idempotency_requests_total', { ...scope, outcome: 'rejected_key' }),
    ).toBe(1);
    expect(res.text).not.toContain('scope="unknown"');
    expect(
      sample(res.text, 'idempotency_requests_total', { ...scope, outcome: 'stored_failure' }),
    ).toBe(1);
    expect(sample(res.text, 'idempotency_claims_total', { ...scope, mode: 'atomic' })).toBe(2);
    expect(
      sample(res.text, 'idempotency_claim_duration_seconds_count', { ...scope, mode: 'atomic' }),
    ).toBe(2);
    expect(
      sample(res.text, 'idempotency_request_duration_seconds_count', {
        ...scope,
        outcome: 'completed',
      }),
    ).toBe(1);
    // Raw keys never reach the metrics (nor the logs: keys are logged as a short hash).
    expect(res.text).not.toContain(key);
  });
});
