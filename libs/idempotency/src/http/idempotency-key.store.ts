import { Injectable } from '@nestjs/common';
import type { ExistingKey } from './existing-key';
import {
  type ClaimResult,
  claimFailure,
  claimResultFrom,
  claimStatement,
  deleteExpiredStatement,
  existingKeyFrom,
  readStatement,
  recordFailure,
  recordStatement,
  RESTORE_LOCK_TIMEOUT_STATEMENT,
  ROLLBACK_TO_SAVEPOINT,
  SAVEPOINT,
} from './idempotency-key.statements';
import type { KeyId } from './key-id';
import { runKeyStatement } from './run-key-statement';
import type { RecordedResponse } from './sealing/sealed-response';
import type { SqlStatement } from '../shared/sql-literals';
import { TransactionHostRef } from './transaction-host.ref';

/**
 * Sends the key statements one round trip each, on the current transaction (`txHost.tx`), so
 * the claim, the handler's writes and the recorded response commit (or vanish) together. The
 * atomic mode uses it when it cannot batch them with START TRANSACTION and COMMIT (inside a
 * transaction someone else opened); both modes read and expire keys through it.
 */
@Injectable()
export class IdempotencyKeyStore {
  constructor(private readonly transactions: TransactionHostRef) {}

  /** Atomic mode: see `claimStatement`; `existing` is absent when the twin committed meanwhile. */
  async claim(
    id: KeyId,
    requestHash: string,
    ttlSeconds: number,
    lockTimeoutMs: number,
  ): Promise<ClaimResult> {
    let rows: unknown[];
    try {
      rows = await this.run(claimStatement(id, requestHash, ttlSeconds, lockTimeoutMs));
    } catch (error) {
      throw claimFailure(error);
    }
    return claimResultFrom(rows);
  }

  /** Reads the row that beat this claim. */
  async read(id: KeyId): Promise<ExistingKey | undefined> {
    return existingKeyFrom(await this.run(readStatement(id)));
  }

  /**
   * Removes a completed row past its time to live, so the key can be claimed as new; waits for
   * a transaction that holds it at most `lockTimeoutMs` (then `ClaimConflictError`).
   */
  async deleteExpired(id: KeyId, lockTimeoutMs: number): Promise<void> {
    try {
      await this.run(deleteExpiredStatement(id, lockTimeoutMs));
    } catch (error) {
      throw claimFailure(error);
    }
  }

  /** Atomic mode: records the exact response (sealed already); it commits with the handler's writes. */
  async record(id: KeyId, response: RecordedResponse): Promise<void> {
    try {
      await this.run(recordStatement(id, response));
    } catch (error) {
      throw recordFailure(error);
    }
  }

  /** Marks where a stored failure rolls the handler's writes back to (`SAVEPOINT_STATEMENTS`). */
  async savepoint(): Promise<void> {
    await this.run(SAVEPOINT);
  }

  /** Gives the transaction back the `lock_timeout` a claim's bound replaced. */
  async restoreLockTimeout(): Promise<void> {
    await this.run(RESTORE_LOCK_TIMEOUT_STATEMENT);
  }

  async rollbackToSavepoint(): Promise<void> {
    await this.run(ROLLBACK_TO_SAVEPOINT);
  }

  private run(statement: SqlStatement): Promise<unknown[]> {
    return runKeyStatement(this.transactions.host.tx, statement);
  }
}
