import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The inbox: when a message's copy reached the dead-letter queue. Its failures stay on record,
 * and the next failure of a message moved back from there starts the count afresh.
 */
export class AddInboxDeadLettered1764921600700 implements MigrationInterface {
  name = 'AddInboxDeadLettered1764921600700';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE inbox_failures ADD COLUMN dead_lettered_at timestamptz`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE inbox_failures DROP COLUMN dead_lettered_at`);
  }
}
