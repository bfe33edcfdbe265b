import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Creates `idempotency_keys`. Add it to your DataSource's `migrations`. */
export class CreateIdempotencyKeys1764662400000 implements MigrationInterface {
  name = 'CreateIdempotencyKeys1764662400000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE idempotency_keys (
        tenant_id        text        NOT NULL,
        endpoint         text        NOT NULL,
        idem_key         text        NOT NULL,
        request_hash     text        NOT NULL,
        status           text        NOT NULL,
        response_code    smallint,
        response_headers jsonb,
        response_body    bytea,
        created_at       timestamptz NOT NULL DEFAULT now(),
        updated_at       timestamptz NOT NULL DEFAULT now(),
        expires_at       timestamptz NOT NULL,
        CONSTRAINT idempotency_keys_pkey PRIMARY KEY (tenant_id, endpoint, idem_key),
        CONSTRAINT idempotency_keys_status_check CHECK (status IN ('in_progress', 'completed')),
        CONSTRAINT idempotency_keys_completed_check
          CHECK (status <> 'completed' OR (response_code IS NOT NULL AND response_body IS NOT NULL))
      )`);
    // Cleanup deletes by expiry in batches; this index keeps it off the primary key.
    await queryRunner.query(
      `CREATE INDEX idempotency_keys_expires_at_idx ON idempotency_keys (expires_at)`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE idempotency_keys`);
  }
}
