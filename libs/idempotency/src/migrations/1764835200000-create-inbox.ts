import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Creates the inbox: `processed_messages` and `inbox_failures`. Add it to your DataSource's `migrations`. */
export class CreateInbox1764835200000 implements MigrationInterface {
  name = 'CreateInbox1764835200000';

  async up(queryRunner: QueryRunner): Promise<void> {
    // One row per message a consumer applied, written in the side effect's own transaction:
    // the primary key is what turns a redelivery into a no-op.
    await queryRunner.query(`
      CREATE TABLE processed_messages (
        consumer     text        NOT NULL,
        message_id   text        NOT NULL,
        processed_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT processed_messages_pkey PRIMARY KEY (consumer, message_id)
      )`);
    await queryRunner.query(
      `CREATE INDEX processed_messages_processed_at_idx ON processed_messages (processed_at)`,
    );
    // Failed attempts, counted outside the rolled-back transaction, so that a poison message is
    // dead-lettered after a bounded number of deliveries across every consumer process.
    await queryRunner.query(`
      CREATE TABLE inbox_failures (
        consumer        text        NOT NULL,
        message_id      text        NOT NULL,
        attempts        integer     NOT NULL,
        last_error      text,
        first_failed_at timestamptz NOT NULL DEFAULT now(),
        last_failed_at  timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT inbox_failures_pkey PRIMARY KEY (consumer, message_id)
      )`);
    await queryRunner.query(
      `CREATE INDEX inbox_failures_last_failed_at_idx ON inbox_failures (last_failed_at)`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE inbox_failures`);
    await queryRunner.query(`DROP TABLE processed_messages`);
  }
}
