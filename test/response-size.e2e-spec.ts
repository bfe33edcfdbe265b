import type { INestApplication } from '@nestjs/common';
import { IdempotencyProblemType } from 'nestjs-pg-idempotency';
import { TestDatabase } from './support/database';
import { ACME, postRaw, uniqueCustomer, uniqueKey } from './support/http';
import { createTestApp } from './support/test-app';

/** `IDEMPOTENCY_MAX_RESPONSE_BYTES` below an order's 200-odd bytes: no create can be stored. */
describe('a response over maxResponseBytes', () => {
  let app: INestApplication;
  let url: string;
  let db: TestDatabase;
  beforeAll(async () => {
    db = new TestDatabase();
    app = await createTestApp({ maxResponseBytes: 64 });
    await app.listen(0, '127.0.0.1');
    url = await app.getUrl();
  });
  afterAll(async () => {
    await app.close();
    await db.close();
  });

  it('is a 500 problem of the library, and neither the order nor the key is written', async () => {
    const key = uniqueKey();
    const customerId = uniqueCustomer();
    const response = await postRaw(
      url,
      '/v1/orders',
      JSON.stringify({ customerId, amountCents: 300 }),
      {
        authorization: ACME.authorization,
        'idempotency-key': key,
      },
    );
    expect(response.status).toBe(500);
    expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(JSON.parse(response.text)).toMatchObject({
      type: IdempotencyProblemType.responseTooLarge,
      status: 500,
    });
    expect(await db.orders(ACME.tenant, customerId)).toHaveLength(0);
    expect(await db.keys(ACME.tenant, key)).toHaveLength(0);
  });

  it('refuses a failure over the limit too (the validation problem): nothing is stored', async () => {
    const key = uniqueKey();
    const send = () =>
      postRaw(url, '/v1/orders', JSON.stringify({ customerId: '' }), {
        authorization: ACME.authorization,
        'idempotency-key': key,
      });
    const first = await send();
    // The validation problem is over 64 bytes too: refused, not stored.
    expect(first.status).toBe(500);
    expect(JSON.parse(first.text).type).toBe(IdempotencyProblemType.responseTooLarge);
    expect(await db.keys(ACME.tenant, key)).toHaveLength(0);
  });
});
