import { AppProcess } from './support/app-process';
import { TestDatabase } from './support/database';
import { uniqueKey } from './support/http';
import { newOrder as createOrder, pay as postPayment } from './support/payments';
import { providerCharges } from './support/provider';
import { databaseUrl } from './support/test-app';

// As in payments.e2e-spec.ts: the tests end leases with expireLease() instead of sleeping.
const LEASE_SECONDS = 30;

/**
 * POST /v1/payments against a card processor that ignores `Idempotency-Key`
 * (`PROVIDER_IDEMPOTENCY=off`): the child key cannot stop a second charge, so after a crash
 * between the charge and its record the `charge_sent` step must reconcile (look the charge up
 * by the payment id) instead of charging again. Real processes, killed by the faults.
 */
describe('POST /v1/payments with a provider that ignores idempotency keys', () => {
  let app: AppProcess;
  let db: TestDatabase;

  beforeAll(async () => {
    db = new TestDatabase();
    app = await AppProcess.start({
      DATABASE_URL: databaseUrl(),
      IDEMPOTENCY_LEASE_SECONDS: String(LEASE_SECONDS),
      PROVIDER_IDEMPOTENCY: 'off',
    });
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
        started_steps: string[] | null;
      }>('SELECT status, recovery_point, started_steps FROM idempotency_keys WHERE idem_key = $1', [
        key,
      ])
    )[0];

  /** Lets the lease run out now, as if LEASE_SECONDS had passed. */
  const expireLease = (key: string) =>
    db.query(
      `UPDATE idempotency_keys SET locked_until = now() WHERE idem_key = $1 AND status = 'in_progress'`,
      [key],
    );

  const metrics = async () => (await fetch(`${app.url}/metrics`)).text();

  it('the stub charges every POST /charges, even twice under one key', async () => {
    const reference = `ref-${uniqueKey()}`;
    const charge = () =>
      fetch(`${app.providerUrl}/charges`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': 'one-key' },
        body: JSON.stringify({ amountCents: 700, currency: 'usd', reference }),
      });
    expect((await charge()).status).toBe(201);
    expect((await charge()).status).toBe(201);
    const charges = await providerCharges(app.providerUrl, reference);
    expect(charges).toHaveLength(2);
    expect(charges.map((c) => c.idempotencyKey)).toEqual(['one-key', 'one-key']);
    expect(charges[0].id).not.toBe(charges[1].id);
  });

  it('crash-after-charge, then a retry after the lease: reconciled by the payment id, one charge', async () => {
    const orderId = await newOrder();
    const key = uniqueKey();
    await expect(pay(key, orderId, 2500, 'crash-after-charge')).rejects.toThrow();
    expect(await app.waitForExit()).toBeNull();
    await app.start();

    // Charged, not recorded: the step started, its outcome is uncertain.
    const [payment] = await db.payments(orderId);
    expect(payment.status).toBe('pending');
    const [charged] = await providerCharges(app.providerUrl, payment.id);
    expect(charged).toBeDefined();
    expect(await keyRow(key)).toEqual({
      status: 'in_progress',
      recovery_point: 'created',
      started_steps: ['charge_sent'],
    });

    await expireLease(key);
    const retry = await pay(key, orderId, 2500);
    expect(retry.status).toBe(201);
    expect(JSON.parse(retry.text)).toMatchObject({
      id: payment.id,
      status: 'captured',
      providerChargeId: charged.id,
    });
    expect(await providerCharges(app.providerUrl, payment.id)).toEqual([
      expect.objectContaining({ id: charged.id, amountCents: 2500 }),
    ]);
    expect(await db.payments(orderId)).toEqual([
      { id: payment.id, status: 'captured', provider_charge_id: charged.id },
    ]);
    expect(await db.orderStatus(orderId)).toBe('paid');
    expect(await keyRow(key)).toMatchObject({ status: 'completed', recovery_point: 'finished' });
    const scraped = await metrics();
    expect(scraped).toContain(
      'idempotency_uncertain_steps_total{scope="POST /v1/payments",step="charge_sent"} 1',
    );
    expect(scraped).toContain(
      'idempotency_reconciled_steps_total{scope="POST /v1/payments",step="charge_sent",found="true"} 1',
    );

    expect((await pay(key, orderId, 2500)).text).toBe(retry.text);
    expect(await providerCharges(app.providerUrl, payment.id)).toHaveLength(1);
  });

  it('provider-timeout: the answer is lost, the retry finds the charge instead of charging again', async () => {
    const orderId = await newOrder();
    const key = uniqueKey();
    expect((await pay(key, orderId, 2600, 'provider-timeout')).status).toBe(504);
    const [payment] = await db.payments(orderId);
    // The stub commits the charge once its slow answer is due.
    await new Promise((r) => setTimeout(r, 1600));
    const [charged] = await providerCharges(app.providerUrl, payment.id);
    expect(charged).toBeDefined();

    const retry = await pay(key, orderId, 2600);
    expect(retry.status).toBe(201);
    expect(JSON.parse(retry.text).providerChargeId).toBe(charged.id);
    expect(await providerCharges(app.providerUrl, payment.id)).toHaveLength(1);
  });

  it('crash-before-charge: never started, so nothing to reconcile; the retry charges once', async () => {
    const orderId = await newOrder();
    const key = uniqueKey();
    await expect(pay(key, orderId, 2700, 'crash-before-charge')).rejects.toThrow();
    expect(await app.waitForExit()).toBeNull();
    await app.start();
    const [payment] = await db.payments(orderId);
    expect(await keyRow(key)).toMatchObject({ recovery_point: 'created', started_steps: null });

    await expireLease(key);
    const retry = await pay(key, orderId, 2700);
    expect(retry.status).toBe(201);
    expect(await providerCharges(app.providerUrl, payment.id)).toHaveLength(1);
    expect(await metrics()).not.toContain('idempotency_uncertain_steps_total{');
  });
});
