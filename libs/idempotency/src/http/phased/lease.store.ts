import { Injectable } from '@nestjs/common';
import { claimFailure } from '../idempotency-key.statements';
import type { StoredResponse } from '../idempotency.options';
import type { KeyId } from '../key-id';
import { runKeyStatement } from '../run-key-statement';
import { RecordSealer } from '../sealing/record-sealer';
import type { SqlStatement } from '../../shared/sql-literals';
import { TransactionHostRef } from '../transaction-host.ref';
import {
  claimLeaseStatement,
  completeLeaseStatement,
  fencedUpdateApplied,
  type LeaseClaim,
  leaseClaimFrom,
  recordedStepStatement,
  recordStepStartStatement,
  recordStepStatement,
  releaseLeaseStatement,
  stepJson,
} from './lease.statements';

/**
 * Sends the phased mode's lease statements, each on `txHost.tx`: outside a transaction they
 * commit at once; a step's record runs inside the step's transaction and commits with its writes.
 * Step results and the response are sealed before they are sent and opened when read
 * (`RecordSealer`).
 */
@Injectable()
export class LeaseStore {
  constructor(
    private readonly transactions: TransactionHostRef,
    private readonly sealer: RecordSealer,
  ) {}

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
    try {
      return leaseClaimFrom(rows, (step, text) => this.sealer.openStep(id, step, text));
    } catch (error) {
      // A step that cannot be opened fails closed; the lease ends now, so each retry gets the
      // same answer at once instead of a 409 until the lease runs out.
      await this.releaseLease(id, owner).catch(() => undefined);
      throw error;
    }
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
      await this.run(
        recordStepStatement(
          id,
          owner,
          step,
          this.sealer.sealStep(id, step, stepJson(result)),
          leaseSeconds,
        ),
      ),
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

  /** The committed result of `step` under this attempt's lease, or undefined when it has none. */
  async recordedStep(
    id: KeyId,
    owner: string,
    step: string,
  ): Promise<{ value: unknown } | undefined> {
    const [row] = (await this.run(recordedStepStatement(id, owner, step))) as Array<{
      step: string;
    }>;
    return row && { value: JSON.parse(this.sealer.openStep(id, step, row.step)) as unknown };
  }

  /** False when another attempt took the key over. */
  async completeLease(id: KeyId, owner: string, response: StoredResponse): Promise<boolean> {
    return fencedUpdateApplied(
      await this.run(completeLeaseStatement(id, owner, this.sealer.sealResponse(id, response))),
    );
  }

  /**
   * Ends this attempt's lease `holdSeconds` from now (`releaseLeaseStatement`). False when
   * another attempt took the key over (there was no lease of this one to end).
   */
  async releaseLease(id: KeyId, owner: string, holdSeconds = 0): Promise<boolean> {
    return fencedUpdateApplied(await this.run(releaseLeaseStatement(id, owner, holdSeconds)));
  }

  private run(statement: SqlStatement): Promise<unknown[]> {
    return runKeyStatement(this.transactions.host.tx, statement);
  }
}
