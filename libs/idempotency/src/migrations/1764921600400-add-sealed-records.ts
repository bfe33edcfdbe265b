import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Option `encryption`: the id of the key that sealed a row's response (or, while a phased row is
 * in progress, its newest step result). Null on a plain row, so rows written without encryption
 * keep their format.
 */
export class AddSealedRecords1764921600400 implements MigrationInterface {
  name = 'AddSealedRecords1764921600400';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE idempotency_keys ADD COLUMN sealed_with text`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE idempotency_keys DROP COLUMN sealed_with`);
  }
}
