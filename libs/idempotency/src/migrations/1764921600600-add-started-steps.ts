import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Phased mode: the external steps an attempt started, recorded before each call. A started step
 * without a recorded result is *uncertain* (the call may have happened), which a resumed attempt
 * must tell from a step that never started. Atomic rows leave it null.
 */
export class AddStartedSteps1764921600600 implements MigrationInterface {
  name = 'AddStartedSteps1764921600600';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE idempotency_keys ADD COLUMN started_steps text[]`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE idempotency_keys DROP COLUMN started_steps`);
  }
}
