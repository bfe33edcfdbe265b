import type { MigrationInterface, QueryRunner } from 'typeorm';

export class CreatePayments1764748800200 implements MigrationInterface {
  name = 'CreatePayments1764748800200';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE payments (
        id                 uuid        NOT NULL DEFAULT gen_random_uuid() PRIMARY KEY,
        tenant_id          text        NOT NULL,
        order_id           uuid        NOT NULL REFERENCES orders (id),
        amount_cents       integer     NOT NULL CHECK (amount_cents > 0),
        status             text        NOT NULL CHECK (status IN ('pending', 'captured', 'declined')),
        provider_charge_id text,
        created_at         timestamptz NOT NULL DEFAULT now(),
        updated_at         timestamptz NOT NULL DEFAULT now()
      )`);
    await queryRunner.query(
      `CREATE INDEX payments_tenant_order_idx ON payments (tenant_id, order_id)`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE payments`);
  }
}
