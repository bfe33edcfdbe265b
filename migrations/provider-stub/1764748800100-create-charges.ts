import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The provider stub's charges, in its own schema (search_path). */
export class CreateCharges1764748800100 implements MigrationInterface {
  name = 'CreateCharges1764748800100';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE charges (
        id              text        PRIMARY KEY,
        amount_cents    integer     NOT NULL CHECK (amount_cents > 0),
        currency        text        NOT NULL,
        reference       text        NOT NULL,
        status          text        NOT NULL,
        idempotency_key text        NOT NULL,
        created_at      timestamptz NOT NULL DEFAULT now()
      )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE charges`);
  }
}
