import type { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateOrders1764662400100 implements MigrationInterface {
  name = 'CreateOrders1764662400100';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE orders (
        id           uuid        NOT NULL DEFAULT gen_random_uuid() PRIMARY KEY,
        tenant_id    text        NOT NULL,
        customer_id  text        NOT NULL,
        amount_cents integer     NOT NULL CHECK (amount_cents > 0),
        currency     text        NOT NULL CHECK (currency IN ('usd', 'eur', 'gbp')),
        reference    text,
        status       text        NOT NULL CHECK (status IN ('pending', 'paid')),
        created_at   timestamptz NOT NULL DEFAULT now()
      )`);
    // The natural-key backstop: a second order with the same reference under another
    // idempotency key is refused by the database, not by a check-then-insert.
    await queryRunner.query(
      `CREATE UNIQUE INDEX orders_tenant_reference_key ON orders (tenant_id, reference) WHERE reference IS NOT NULL`,
    );
    await queryRunner.query(
      `CREATE INDEX orders_tenant_created_idx ON orders (tenant_id, created_at)`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE orders`);
  }
}
