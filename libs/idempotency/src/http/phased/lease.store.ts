import { Injectable } from '@nestjs/common';
import { claimFailure } from '../idempotency-key.statements';
import type { StoredResponse } from '../idempotency.options';
import type { KeyId } from '../key-id';
import { runKeyStatement } from '../run-key-statement';
import type { SqlStatement } from '../../shared/sql-literals';
import { TransactionHostRef } from '../transaction-host.ref';
import {
  claimLeaseStatement,
  completeLeaseStatement,
  fencedUpdateApplied,
  type LeaseClaim,
  leaseClaimFrom,
  recordStepStartStatement,
  recordStepStatement,
  releaseLeaseStatement,
} from './lease.statements';

/**
 * Sends the phased mode's lease statements, each on `txHost.tx`: outside a transaction they
 * commit at once; a step's record runs inside the step's transaction and commits with its writes.
 */
@Injectable()
export class LeaseStore {
  constructor(private readonly transactions: TransactionHostRef) {}

  async claimLease(
    id: KeyId,
    requestHash: string,
    ttlSeconds: number,
    leaseSeconds: number,
    owner: string,
    lockTimeoutMs: number,
  ): Promise<LeaseClaim> {
    let rows: unknown[];
    try {
      rows = await this.run(
        claimLeaseStatement(id, requestHash, ttlSeconds, leaseSeconds, owner, lockTimeoutMs),
      );
    } catch (error) {
      throw claimFailure(error);
    }
    return leaseClaimFrom(rows);
  }

  /** False when another attempt took the key over: the caller's transaction must roll back its step. */
  async recordStep(
    id: KeyId,
    owner: string,
    step: string,
    result: unknown,
    leaseSeconds: number,
  ): Promise<boolean> {
    return fencedUpdateApplied(
      await this.run(recordStepStatement(id, owner, step, result, leaseSeconds)),
    );
  }

  /** False when another attempt took the key over: the step's call must not be made. */
  async recordStepStart(
    id: KeyId,
    owner: string,
    step: string,
    leaseSeconds: number,
  ): Promise<boolean> {
    return fencedUpdateApplied(
      await this.run(recordStepStartStatement(id, owner, step, leaseSeconds)),
    );
  }

  /** False when another attempt took the key over. */
  async completeLease(id: KeyId, owner: string, response: StoredResponse): Promise<boolean> {
    return fencedUpdateApplied(await this.run(completeLeaseStatement(id, owner, response)));
  }

  async releaseLease(id: KeyId, owner: string): Promise<void> {
    await this.run(releaseLeaseStatement(id, owner));
  }

  private run(statement: SqlStatement): Promise<unknown[]> {
    return runKeyStatement(this.transactions.host.tx, statement);
  }
}
