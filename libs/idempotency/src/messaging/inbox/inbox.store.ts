import { errorText } from '../../shared/error-text';
import { Injectable } from '@nestjs/common';
import { Propagation } from '@nestjs-cls/transactional';
import type { QueryRunner } from 'typeorm';
import { boundLockTimeout, RESTORE_LOCK_TIMEOUT } from '../../shared/lock-timeout';
import { isLockTimeout, isSerializationFailure } from '../../shared/postgres-errors';
import { type EscapeLiteral, inlineParameters } from '../../shared/sql-literals';
import { MessageInFlightError } from './inbox.errors';
import { MessagingTransactionHost } from '../messaging-transaction-host';

/** The part of the transaction's node-postgres client the claim uses. */
interface PostgresClient {
  query(text: string): Promise<PostgresResult[]>;
  escapeLiteral: EscapeLiteral;
}

interface PostgresResult {
  rowCount: number | null;
}

/** The part of node-postgres's client `refuseSilentRollback` uses. */
interface CommandClient {
  query(text: string): Promise<{ command?: string | null }>;
}

/** Every statement the library sends about processed messages lives here. */
@Injectable()
export class InboxStore {
  constructor(private readonly txHost: MessagingTransactionHost) {}

  /**
   * Records the message as processed in the current transaction; false when it already was.
   * A twin delivery still in flight holds the row uncommitted: this insert waits for it (at
   * most `lockTimeoutMs`, then `MessageInFlightError`) and then sees the conflict, so the
   * primary key, not process memory, decides between racing consumers.
   *
   * The bound is for the claim alone: the handler that runs next gets the transaction's own
   * `lock_timeout` back (`RESTORE_LOCK_TIMEOUT`). All three statements go in one round trip
   * (the simple query protocol takes several, with their values inline).
   */
  async claim(consumer: string, messageId: string, lockTimeoutMs: number): Promise<boolean> {
    const client = (await this.runner().connect()) as PostgresClient;
    if (typeof client.escapeLiteral !== 'function') {
      throw new Error(
        "the inbox needs node-postgres's JavaScript client (pg); pg-native is not supported",
      );
    }
    const insert = inlineParameters(
      {
        text: `INSERT INTO processed_messages (consumer, message_id) VALUES ($1, $2)
               ON CONFLICT (consumer, message_id) DO NOTHING`,
        values: [consumer, messageId],
      },
      (value) => client.escapeLiteral(value),
    );
    let results: PostgresResult[];
    try {
      results = await client.query(
        `SELECT ${boundLockTimeout(`'${Math.trunc(lockTimeoutMs)}ms'`)};\n${insert};\n${RESTORE_LOCK_TIMEOUT}`,
      );
    } catch (error) {
      // A serialization failure is a twin that committed while this claim waited on it, under
      // REPEATABLE READ or SERIALIZABLE: the retry, in a new transaction, sees the duplicate.
      if (isLockTimeout(error) || isSerializationFailure(error))
        throw new MessageInFlightError(lockTimeoutMs);
      throw error;
    }
    // Three statements, three results. Anything else must not pass for a duplicate, which the
    // caller would acknowledge.
    if (
      !Array.isArray(results) ||
      results.length !== 3 ||
      typeof results[1]?.rowCount !== 'number'
    ) {
      throw new Error('the inbox claim returned an unexpected result');
    }
    return results[1].rowCount === 1;
  }

  /**
   * Counts a failed delivery, in its own statement: the failed transaction rolled back, and
   * the count must survive it (and the process) so that a poison message stops somewhere.
   */
  async recordFailure(consumer: string, messageId: string, error: string): Promise<number> {
    const rows = (await this.txHost.withTransaction(Propagation.RequiresNew, () =>
      this.runner().query(
        `INSERT INTO inbox_failures (consumer, message_id, attempts, last_error)
         VALUES ($1, $2, 1, $3)
         ON CONFLICT (consumer, message_id) DO UPDATE
           SET attempts = CASE WHEN inbox_failures.dead_lettered_at IS NULL
                               THEN inbox_failures.attempts + 1 ELSE 1 END,
               dead_lettered_at = NULL,
               last_error = EXCLUDED.last_error,
               last_failed_at = now()
         RETURNING attempts::text AS attempts`,
        // PostgreSQL text cannot hold NUL: an error that quotes one must still be counted.
        [consumer, messageId, error.replaceAll('\u0000', '').slice(0, 2000)],
      ),
    )) as Array<{ attempts: string }>;
    return Number(rows[0].attempts);
  }

  /**
   * Notes that a message's copy is on the dead-letter queue. Its failures stay on record; moved
   * back from there (the bug fixed), its next failure counts from 1 again (`recordFailure`),
   * so it gets `maxAttempts` again instead of one.
   */
  async markDeadLettered(consumer: string, messageId: string): Promise<void> {
    await this.txHost.tx.query(
      `UPDATE inbox_failures SET dead_lettered_at = now() WHERE consumer = $1 AND message_id = $2`,
      [consumer, messageId],
    );
  }

  /**
   * Notes whether a statement sent through the transaction's query runner fails while the
   * handler runs. A handler that catches such a failure and goes on leaves PostgreSQL's
   * transaction aborted, and its COMMIT then rolls back without an error: the message would
   * be acknowledged with nothing applied. `assertUsable` finds that out with one statement, sent
   * only when something failed (a failure inside a savepoint the handler rolled back is fine).
   * It first waits for the statements still running: one the handler sent without awaiting it
   * fails after the handler returned, and would abort the transaction just the same.
   */
  watchStatements(): { assertUsable(): Promise<void>; stop(): void } {
    const runner = this.runner();
    // An own property over whatever `query` was: `stop` puts that back.
    const before = Object.getOwnPropertyDescriptor(runner, 'query');
    const send = runner.query.bind(runner) as (...args: unknown[]) => Promise<unknown>;
    let failure: unknown;
    const running = new Set<Promise<unknown>>();
    runner.query = ((...args: unknown[]) => {
      const sent = send(...args);
      running.add(sent);
      sent.then(
        () => running.delete(sent),
        (error: unknown) => {
          running.delete(sent);
          failure ??= error;
        },
      );
      return sent;
    }) as QueryRunner['query'];
    const stop = () => {
      if (before) Object.defineProperty(runner, 'query', before);
      else delete (runner as Partial<Pick<QueryRunner, 'query'>>).query;
    };
    return {
      stop,
      assertUsable: async () => {
        if (running.size > 0) await Promise.allSettled(running);
        if (failure === undefined) return;
        stop();
        try {
          await runner.query('SELECT 1');
        } catch (error) {
          throw new Error(
            `the handler went on after a failed statement (${errorText(failure)}); PostgreSQL ` +
              `aborted its transaction, so nothing it wrote could commit`,
            { cause: error },
          );
        }
      },
    };
  }

  /**
   * Makes this transaction's COMMIT fail when PostgreSQL answers it with ROLLBACK, as it does,
   * without an error, for a transaction a failed statement aborted. `watchStatements` catches a
   * failure the handler swallowed or left running; a chain of statements it left running can
   * send its failing one after that check, and only the COMMIT's answer tells. The message then
   * counts as failed instead of applied.
   */
  refuseSilentRollback(): void {
    const runner = this.runner();
    // node-postgres's client under TypeORM's runner: its results carry the command tag.
    const client = (runner as { databaseConnection?: CommandClient }).databaseConnection;
    if (typeof client?.query !== 'function') return;
    const send = runner.query.bind(runner) as (...args: unknown[]) => Promise<unknown>;
    runner.query = ((...args: unknown[]) => {
      if (args[0] !== 'COMMIT') return send(...args);
      return client.query('COMMIT').then((result) => {
        if (result.command === 'ROLLBACK') {
          throw new Error(
            'PostgreSQL rolled the transaction back at COMMIT: a statement the handler left ' +
              'running failed after it returned, so nothing it wrote was kept',
          );
        }
        return [];
      });
    }) as QueryRunner['query'];
  }

  /** Deletes up to `limit` processed ids older than the retention; one short statement. */
  async purgeProcessed(retentionSeconds: number, limit: number): Promise<number> {
    return this.purge('processed_messages', 'processed_at', retentionSeconds, limit);
  }

  async purgeFailures(retentionSeconds: number, limit: number): Promise<number> {
    return this.purge('inbox_failures', 'last_failed_at', retentionSeconds, limit);
  }

  /** SKIP LOCKED: two processes cleaning at once split the rows instead of waiting on each other. */
  private async purge(
    table: string,
    column: string,
    retentionSeconds: number,
    limit: number,
  ): Promise<number> {
    const rows = await this.txHost.tx.query<Array<{ deleted: string }>>(
      `WITH deleted AS (
         DELETE FROM ${table}
          WHERE (consumer, message_id) IN (
            SELECT consumer, message_id FROM ${table}
             WHERE ${column} < now() - make_interval(secs => $1)
             ORDER BY ${column}
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
      throw new Error('InboxStore used outside a transaction');
    }
    return runner;
  }
}
