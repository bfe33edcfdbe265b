import { Injectable } from '@nestjs/common';
import { Propagation, TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import type { QueryRunner } from 'typeorm';

/** Every statement the library sends about processed messages lives here. */
@Injectable()
export class InboxStore {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  /**
   * Records the message as processed in the current transaction; false when it already was.
   * A twin delivery still in flight holds the row uncommitted: this insert waits for it (at
   * most `lockTimeoutMs`, then SQLSTATE 55P03) and then sees the conflict, so the primary key,
   * not process memory, decides between racing consumers.
   */
  async claim(consumer: string, messageId: string, lockTimeoutMs: number): Promise<boolean> {
    const rows: unknown[] = await this.runner().query(
      `INSERT INTO processed_messages (consumer, message_id)
       SELECT $1, $2 FROM (SELECT set_config('lock_timeout', $3, true)) AS bounded_wait
       ON CONFLICT (consumer, message_id) DO NOTHING
       RETURNING 1`,
      [consumer, messageId, `${Math.trunc(lockTimeoutMs)}ms`],
    );
    return rows.length === 1;
  }

  /**
   * Counts a failed delivery, in its own statement: the failed transaction rolled back, and
   * the count must survive it (and the process) so that a poison message stops somewhere.
   */
  async recordFailure(consumer: string, messageId: string, error: string): Promise<number> {
    const rows: Array<{ attempts: number }> = await this.txHost.withTransaction(Propagation.RequiresNew, () =>
      this.runner().query(
        `INSERT INTO inbox_failures (consumer, message_id, attempts, last_error)
         VALUES ($1, $2, 1, $3)
         ON CONFLICT (consumer, message_id) DO UPDATE
           SET attempts = inbox_failures.attempts + 1,
               last_error = EXCLUDED.last_error,
               last_failed_at = now()
         RETURNING attempts`,
        [consumer, messageId, error.slice(0, 2000)],
      ),
    );
    return rows[0].attempts;
  }

  /** Deletes up to `limit` processed ids older than the retention; one short statement. */
  async purgeProcessed(retentionSeconds: number, limit: number): Promise<number> {
    return this.purge('processed_messages', 'processed_at', retentionSeconds, limit);
  }

  async purgeFailures(retentionSeconds: number, limit: number): Promise<number> {
    return this.purge('inbox_failures', 'last_failed_at', retentionSeconds, limit);
  }

  /** SKIP LOCKED: two processes cleaning at once split the rows instead of waiting on each other. */
  private async purge(table: string, column: string, retentionSeconds: number, limit: number): Promise<number> {
    const rows: Array<{ deleted: number }> = await this.txHost.tx.query(
      `WITH deleted AS (
         DELETE FROM ${table}
          WHERE (consumer, message_id) IN (
            SELECT consumer, message_id FROM ${table}
             WHERE ${column} < now() - make_interval(secs => $1)
             ORDER BY ${column}
             LIMIT $2
             FOR UPDATE SKIP LOCKED)
         RETURNING 1)
       SELECT count(*)::int AS deleted FROM deleted`,
      [retentionSeconds, limit],
    );
    return rows[0].deleted;
  }

  private runner(): QueryRunner {
    const runner = this.txHost.tx.queryRunner;
    if (!runner || !runner.isTransactionActive) {
      throw new Error('InboxStore used outside a transaction');
    }
    return runner;
  }
}
