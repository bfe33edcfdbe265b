import { Injectable } from '@nestjs/common';
import type { QueryRunner } from 'typeorm';
import { MessagingTransactionHost } from '../messaging-transaction-host';
import type { OutboxMessage } from '../messaging-transport';

export interface NewOutboxRow {
  messageId: string;
  exchange: string;
  routingKey: string;
  payload: string;
  headers: string;
}

/** A due row: the message the relay publishes, and the id it marks the row by. */
export type DueOutboxRow = OutboxMessage & { id: string };

/** `DueOutboxRow` as the claim's JSON text carries it. */
type DueOutboxJson = Omit<DueOutboxRow, 'createdAt'> & { createdAt: string };

/** `inserted`: a new row; `same`: the row existed with this content; `different`: it did not. */
export type OutboxInsertResult = 'inserted' | 'same' | 'different';

/**
 * An existing row against new content ($2 to $5), as the word `OutboxInsertResult` uses: the
 * library reads text, never a boolean the app's own type parsers could turn into something else.
 */
const SAME_CONTENT = `CASE WHEN exchange = $2 AND routing_key = $3 AND payload = $4::jsonb AND headers = $5::jsonb
              THEN 'same' ELSE 'different' END AS outcome`;

/** Every statement the library sends about the outbox lives here. */
@Injectable()
export class OutboxStore {
  constructor(private readonly txHost: MessagingTransactionHost) {}

  /**
   * Writes the event in the current transaction; an existing row with the same message id is
   * left alone and compared in the same round trip. When the twin is still uncommitted the
   * insert waits for it and the statement's snapshot misses it: that case reads as `same`
   * only after a fresh read, done by `contentOf`.
   *
   * Due from the moment it is written (`clock_timestamp()`), not from its transaction's start
   * (the column's default, `now()`): the relay takes rows in that order, so an event written
   * after another, by a transaction that began before it, is still published after it.
   */
  async insert(row: NewOutboxRow): Promise<OutboxInsertResult | undefined> {
    const rows = (await this.runner().query(
      `WITH inserted AS (
         INSERT INTO outbox_messages (message_id, exchange, routing_key, payload, headers, next_attempt_at)
         VALUES ($1, $2, $3, $4::jsonb, $5::jsonb, clock_timestamp())
         ON CONFLICT (message_id) DO NOTHING
         RETURNING 1
       )
       SELECT 'inserted' AS outcome FROM inserted
       UNION ALL
       SELECT ${SAME_CONTENT} FROM outbox_messages WHERE message_id = $1`,
      [row.messageId, row.exchange, row.routingKey, row.payload, row.headers],
    )) as Array<{ outcome: OutboxInsertResult }>;
    return rows[0]?.outcome;
  }

  /** Compares an existing row with new content, with a fresh snapshot. */
  async contentOf(row: NewOutboxRow): Promise<OutboxInsertResult | undefined> {
    const rows = (await this.runner().query(
      `SELECT ${SAME_CONTENT} FROM outbox_messages WHERE message_id = $1`,
      [row.messageId, row.exchange, row.routingKey, row.payload, row.headers],
    )) as Array<{ outcome: OutboxInsertResult }>;
    return rows[0]?.outcome;
  }

  /**
   * Locks up to `limit` due rows for this relay transaction. SKIP LOCKED: rows another relay
   * holds are not waited for but skipped, so several relays share the work and none publishes
   * a row another is publishing. The locks last until this relay commits its marks.
   */
  async claimDue(limit: number): Promise<DueOutboxRow[]> {
    // One JSON text per row, parsed here: the app's own type parsers (jsonb as text, bigint as
    // a number, timestamps as strings) cannot change what the relay publishes.
    const rows = (await this.runner().query(
      `SELECT json_build_object(
                'id', id::text, 'messageId', message_id, 'exchange', exchange,
                'routingKey', routing_key, 'payload', payload, 'headers', headers,
                'attempts', attempts, 'createdAt', created_at)::text AS due
         FROM outbox_messages
        WHERE status = 'pending' AND next_attempt_at <= now()
        ORDER BY next_attempt_at, id
        LIMIT $1
        FOR UPDATE SKIP LOCKED`,
      [limit],
    )) as Array<{ due: string }>;
    return rows.map(({ due }) => {
      const row = JSON.parse(due) as DueOutboxJson;
      return { ...row, createdAt: new Date(row.createdAt) };
    });
  }

  async markSent(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.runner().query(
      `UPDATE outbox_messages
          SET status = 'sent', sent_at = now(), attempts = attempts + 1, last_error = NULL
        WHERE id = ANY($1::bigint[])`,
      [ids],
    );
  }

  /**
   * Backs a failed row off exponentially: base × 2^attempts, capped. The exponent is capped
   * too: float8 `power(2, n)` raises "value out of range" from n = 1024 on, which would fail
   * every batch holding a row refused that often (about 3.5 days at a 5-minute cap).
   */
  async markFailed(
    failures: Array<{ id: string; error: string }>,
    baseMs: number,
    maxMs: number,
  ): Promise<void> {
    if (failures.length === 0) return;
    await this.runner().query(
      `UPDATE outbox_messages AS o
          SET attempts = o.attempts + 1,
              last_error = f.error,
              next_attempt_at = now() + make_interval(secs => least($4::float8, $3::float8 * power(2, least(o.attempts, 30))) / 1000)
         FROM unnest($1::bigint[], $2::text[]) AS f(id, error)
        WHERE o.id = f.id`,
      [failures.map((f) => f.id), failures.map((f) => f.error.slice(0, 2000)), baseMs, maxMs],
    );
  }

  /** Deletes up to `limit` sent rows older than the retention; pending rows are never touched. */
  async purgeSent(retentionSeconds: number, limit: number): Promise<number> {
    const rows = await this.txHost.tx.query<Array<{ deleted: string }>>(
      `WITH deleted AS (
         DELETE FROM outbox_messages
          WHERE id IN (
            SELECT id FROM outbox_messages
             WHERE status = 'sent' AND sent_at < now() - make_interval(secs => $1)
             ORDER BY sent_at
             LIMIT $2
             FOR UPDATE SKIP LOCKED)
         RETURNING 1)
       SELECT count(*)::text AS deleted FROM deleted`,
      [retentionSeconds, limit],
    );
    return Number(rows[0].deleted);
  }

  private runner(): QueryRunner {
    const runner = this.txHost.tx.queryRunner;
    if (!runner || !runner.isTransactionActive) {
      throw new Error('OutboxStore used outside a transaction');
    }
    return runner;
  }
}
