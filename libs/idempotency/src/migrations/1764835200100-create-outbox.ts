import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Creates `outbox_messages`. Add it to your DataSource's `migrations`. */
export class CreateOutbox1764835200100 implements MigrationInterface {
  name = 'CreateOutbox1764835200100';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE outbox_messages (
        id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        message_id      text        NOT NULL,
        exchange        text        NOT NULL,
        routing_key     text        NOT NULL,
        payload         jsonb       NOT NULL,
        headers         jsonb       NOT NULL DEFAULT '{}',
        status          text        NOT NULL DEFAULT 'pending',
        attempts        integer     NOT NULL DEFAULT 0,
        next_attempt_at timestamptz NOT NULL DEFAULT now(),
        last_error      text,
        created_at      timestamptz NOT NULL DEFAULT now(),
        sent_at         timestamptz,
        CONSTRAINT outbox_messages_status_check CHECK (status IN ('pending', 'sent')),
        CONSTRAINT outbox_messages_sent_check CHECK (status <> 'sent' OR sent_at IS NOT NULL)
      )`);
    // A step written twice for one operation must stay one event: the id is unique.
    await queryRunner.query(
      `CREATE UNIQUE INDEX outbox_messages_message_id_key ON outbox_messages (message_id)`,
    );
    // The relay's claim only ever reads due pending rows; sent rows stay out of its index.
    await queryRunner.query(
      `CREATE INDEX outbox_messages_due_idx ON outbox_messages (next_attempt_at, id) WHERE status = 'pending'`,
    );
    await queryRunner.query(
      `CREATE INDEX outbox_messages_sent_at_idx ON outbox_messages (sent_at) WHERE status = 'sent'`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE outbox_messages`);
  }
}
