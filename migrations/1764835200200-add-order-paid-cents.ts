import type { MigrationInterface, QueryRunner } from 'typeorm';

/** What the order-payments consumer has applied to the order, in cents. */
export class AddOrderPaidCents1764835200200 implements MigrationInterface {
  name = 'AddOrderPaidCents1764835200200';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE orders ADD COLUMN paid_cents bigint NOT NULL DEFAULT 0 CHECK (paid_cents >= 0)`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE orders DROP COLUMN paid_cents`);
  }
}
