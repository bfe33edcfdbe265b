import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Columns of the phased mode: the lease (`locked_until`, fenced by `lease_owner`), the last
 * committed recovery point and what each step recorded. Atomic rows leave them null.
 */
export class AddPhasedLeases1764748800000 implements MigrationInterface {
  name = 'AddPhasedLeases1764748800000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE idempotency_keys
        ADD COLUMN recovery_point text,
        ADD COLUMN step_state     jsonb,
        ADD COLUMN locked_until   timestamptz,
        ADD COLUMN lease_owner    uuid`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE idempotency_keys
        DROP COLUMN recovery_point, DROP COLUMN step_state,
        DROP COLUMN locked_until, DROP COLUMN lease_owner`);
  }
}
