import { childKey } from 'nestjs-pg-idempotency';
import { AppProcess } from './support/app-process';
import { TestDatabase } from './support/database';
import { ACME, uniqueKey } from './support/http';
import { newOrder as createOrder, pay as postPayment } from './support/payments';
import { providerCharges } from './support/provider';
import { databaseUrl } from './support/test-app';

// Long enough that a restart on a loaded machine never outlives it; the tests end leases
// on purpose with expireLease() instead of sleeping through them.
const LEASE_SECONDS = 30;

/**
 * POST /v1/payments, phased, against the provider stub, in real processes that the faults
 * kill. Every test counts the charges the provider recorded, and the rows.
 */
describe('POST /v1/payments (phased, real processes, provider stub)', () => {
  let app: AppProcess;
  let db: TestDatabase;
  const env = { DATABASE_URL: databaseUrl(), IDEMPOTENCY_LEASE_SECONDS: String(LEASE_SECONDS) };

  beforeAll(async () => {
    db = new TestDatabase();
    app = await AppProcess.start(env);
  });
  afterAll(async () => {
    await app.stop();
    await db.close();
  });

  const newOrder = () => createOrder(app.url);
  const pay = (key: string, orderId: string, amountCents: number, fault?: string) =>
    postPayment(app.url, key, orderId, amountCents, fault);

  const keyRow = async (key: string) =>
    (
      await db.query<{
        status: string;
        recovery_point: string | null;
        step_state: Record<string, unknown>;
      }>('SELECT status, recovery_point, step_state FROM idempotency_keys WHERE idem_key = $1', [
        key,
      ])
    )[0];

  /** Lets the lease run out now, as if LEASE_SECONDS had passed. */
  const expireLease = (key: string) =>
    db.query(
      `UPDATE idempotency_keys SET locked_until = now() WHERE idem_key = $1 AND status = 'in_progress'`,
      [key],
    );

  /** The child key the payment's charge must carry: derived from the key and this claim of it. */
  async function expectedChildKey(key: string): Promise<string> {
    const [{ generation }] = await db.query<{ generation: string }>(
      `SELECT (extract(epoch FROM created_at) * 1000000)::bigint::text AS generation FROM idempotency_keys WHERE idem_key = $1`,
      [key],
    );
    return childKey(`acme\u0000POST /v1/payments\u0000${key}\u0000${generation}`, 'charge-card');
  }

  async function crash(
    key: string,
    orderId: string,
    amountCents: number,
    fault: string,
  ): Promise<void> {
    await expect(pay(key, orderId, amountCents, fault)).rejects.toThrow();
    expect(await app.waitForExit()).toBeNull();
    await app.start();
  }

  it('captures a payment: charge at the provider under a child key, payment row, order paid', async () => {
    const orderId = await newOrder();
    const key = uniqueKey();
    const res = await pay(key, orderId, 1500);

    expect(res.status).toBe(201);
    const body = JSON.parse(res.text);
    expect(body).toEqual({
      id: expect.any(String),
      orderId,
      amountCents: 1500,
      status: 'captured',
      providerChargeId: expect.stringMatching(/^ch_/),
    });
    const charges = await providerCharges(app.providerUrl, body.id);
    expect(charges).toEqual([
      expect.objectContaining({ id: body.providerChargeId, amountCents: 1500, currency: 'usd' }),
    ]);
    expect(charges[0].idempotencyKey).toBe(await expectedChildKey(key));
    expect(charges[0].idempotencyKey).not.toBe(key);
    expect(await db.payments(orderId)).toEqual([
      { id: body.id, status: 'captured', provider_charge_id: body.providerChargeId },
    ]);
    expect(await db.orderStatus(orderId)).toBe('paid');
    expect(await keyRow(key)).toMatchObject({ status: 'completed', recovery_point: 'finished' });

    const replay = await pay(key, orderId, 1500);
    expect(replay.text).toBe(res.text);
    expect(await providerCharges(app.providerUrl, body.id)).toHaveLength(1);
    const shown = await fetch(`${app.url}/v1/payments/${body.id}`, {
      headers: { authorization: ACME.authorization },
    });
    expect(await shown.json()).toEqual(body);
  });

  it('crash-after-charge: 409 during the lease, then the retry resumes and the provider charged once', async () => {
    const orderId = await newOrder();
    const key = uniqueKey();
    await crash(key, orderId, 2100, 'crash-after-charge');

    // The provider charged; we died before recording it.
    const [payment] = await db.payments(orderId);
    expect(payment.status).toBe('pending');
    const chargesBefore = await providerCharges(app.providerUrl, payment.id);
    expect(chargesBefore).toHaveLength(1);
    expect(await keyRow(key)).toMatchObject({ status: 'in_progress', recovery_point: 'created' });

    const during = await pay(key, orderId, 2100);
    expect(during.status).toBe(409);
    const retryAfter = Number(during.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(LEASE_SECONDS);

    await expireLease(key);
    const retry = await pay(key, orderId, 2100);
    expect(retry.status).toBe(201);
    const body = JSON.parse(retry.text);
    expect(body).toMatchObject({
      id: payment.id,
      status: 'captured',
      providerChargeId: chargesBefore[0].id,
    });
    expect(await providerCharges(app.providerUrl, payment.id)).toHaveLength(1);
    expect(await db.payments(orderId)).toEqual([
      { id: payment.id, status: 'captured', provider_charge_id: chargesBefore[0].id },
    ]);
    expect(await db.orderStatus(orderId)).toBe('paid');
  });

  it('crash-before-charge: the retry resumes after the lease and charges once', async () => {
    const orderId = await newOrder();
    const key = uniqueKey();
    await crash(key, orderId, 2200, 'crash-before-charge');
    const [payment] = await db.payments(orderId);
    expect(await providerCharges(app.providerUrl, payment.id)).toHaveLength(0);
    const row = await keyRow(key);
    expect(row.recovery_point).toBe('created');
    expect(JSON.parse(row.step_state.created as string)).toEqual({
      paymentId: payment.id,
      currency: 'usd',
    });

    await expireLease(key);
    const retry = await pay(key, orderId, 2200);
    expect(retry.status).toBe(201);
    expect(JSON.parse(retry.text).id).toBe(payment.id);
    expect(await providerCharges(app.providerUrl, payment.id)).toHaveLength(1);
    expect(await db.payments(orderId)).toHaveLength(1);
  });

  it('provider-timeout: the answer is lost, the retry finds the charge (made under the child key) by the payment id', async () => {
    const orderId = await newOrder();
    const key = uniqueKey();
    const lost = await pay(key, orderId, 2300, 'provider-timeout');
    expect(lost.status).toBe(504);
    const [payment] = await db.payments(orderId);
    // The provider committed the charge although we never heard back.
    await new Promise((r) => setTimeout(r, 1600));
    const charged = await providerCharges(app.providerUrl, payment.id);
    expect(charged).toHaveLength(1);

    // A transient failure released the lease: the retry runs at once.
    const retry = await pay(key, orderId, 2300);
    expect(retry.status).toBe(201);
    expect(JSON.parse(retry.text).providerChargeId).toBe(charged[0].id);
    const after = await providerCharges(app.providerUrl, payment.id);
    expect(after).toEqual([
      expect.objectContaining({ id: charged[0].id, idempotencyKey: charged[0].idempotencyKey }),
    ]);
    expect(after[0].idempotencyKey).toBe(await expectedChildKey(key));
  });

  it('two retries racing for an expired lease: one takes over, the other gets 409; one charge', async () => {
    const orderId = await newOrder();
    const key = uniqueKey();
    await crash(key, orderId, 2400, 'crash-before-charge');
    const [payment] = await db.payments(orderId);
    await expireLease(key);

    // The winner holds its lease a while (delay fault): the loser finds it live.
    const [a, b] = await Promise.all([
      pay(key, orderId, 2400, 'delay=2000'),
      pay(key, orderId, 2400, 'delay=2000'),
    ]);
    expect([a.status, b.status].sort()).toEqual([201, 409]);
    expect((a.status === 409 ? a : b).headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
    expect(await providerCharges(app.providerUrl, payment.id)).toHaveLength(1);
    expect(await db.payments(orderId)).toEqual([expect.objectContaining({ status: 'captured' })]);
  });

  it('stores a decline (402) and an unknown order (404), and replays both', async () => {
    const orderId = await newOrder();
    const declineKey = uniqueKey();
    const declined = await pay(declineKey, orderId, 1313);
    expect(declined.status).toBe(402);
    expect(JSON.parse(declined.text)).toMatchObject({ code: 'payment_declined', status: 402 });
    expect((await pay(declineKey, orderId, 1313)).text).toBe(declined.text);
    const [payment] = await db.payments(orderId);
    expect(payment.status).toBe('declined');
    expect(await providerCharges(app.providerUrl, payment.id)).toHaveLength(0);
    expect(await db.orderStatus(orderId)).toBe('pending');
    expect(await keyRow(declineKey)).toMatchObject({ status: 'completed' });

    const unknownKey = uniqueKey();
    const unknownOrder = '00000000-0000-4000-8000-000000000000';
    const missing = await pay(unknownKey, unknownOrder, 100);
    expect(missing.status).toBe(404);
    expect((await pay(unknownKey, unknownOrder, 100)).text).toBe(missing.text);
    expect(await db.payments(unknownOrder)).toHaveLength(0);
    expect(await keyRow(unknownKey)).toMatchObject({ status: 'completed' });
  });
});
