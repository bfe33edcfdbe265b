import { TestDatabase as LibraryTestDatabase } from '../../libs/idempotency/test/support/test-database';

/**
 * The library's assertion pool (`query`, `holdUncommitted`, `close`) with the demo's tables:
 * tests read what was committed, exactly as another client of the database would.
 */
export class TestDatabase extends LibraryTestDatabase {
  async orders(tenantId: string, customerId: string) {
    return this.query<{
      id: string;
      amount_cents: number;
      reference: string | null;
      status: string;
    }>(
      `SELECT id, amount_cents, reference, status FROM orders WHERE tenant_id = $1 AND customer_id = $2`,
      [tenantId, customerId],
    );
  }

  async keys(tenantId: string, key: string) {
    return this.query<{
      endpoint: string;
      status: string;
      request_hash: string;
      response_code: number | null;
      response_headers: Record<string, string> | null;
      response_body: Buffer | null;
    }>(
      `SELECT endpoint, status, request_hash, response_code, response_headers, response_body
         FROM idempotency_keys WHERE tenant_id = $1 AND idem_key = $2`,
      [tenantId, key],
    );
  }

  async payments(orderId: string) {
    return this.query<{ id: string; status: string; provider_charge_id: string | null }>(
      'SELECT id, status, provider_charge_id FROM payments WHERE order_id = $1',
      [orderId],
    );
  }

  async orderStatus(orderId: string): Promise<string> {
    return (
      await this.query<{ status: string }>('SELECT status FROM orders WHERE id = $1', [orderId])
    )[0].status;
  }

  /** The order's `paid_cents`, which the order-payments consumer adds to. */
  async paidCents(orderId: string): Promise<number> {
    const [row] = await this.query<{ paid_cents: string }>(
      'SELECT paid_cents FROM orders WHERE id = $1',
      [orderId],
    );
    return Number(row.paid_cents);
  }
}
