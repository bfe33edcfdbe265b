import { Injectable } from '@nestjs/common';
import type { StoredResponse } from './idempotency.options';
import { ClaimConflictError, isLockTimeout, isSerializationFailure, sqlState } from './postgres-errors';
import type { SqlStatement } from './sql-literals';
import { TransactionHostRef } from './transaction-host.ref';

/** Identifies one key: the primary key of `idempotency_keys`. */
export interface KeyId {
  tenantId: string;
  scope: string;
  key: string;
}

/** A row someone else claimed first, as this transaction sees it. */
export interface ExistingKey {
  status: 'in_progress' | 'completed';
  requestHash: string;
  expired: boolean;
  /** Milliseconds the row has left to live, by the database's clock. */
  expiresInMs: number;
  /** Phased mode: whole seconds left on a live lease (undefined when there is none). */
  leaseSecondsLeft?: number;
  response?: StoredResponse;
}

export type ClaimResult =
  | { claimed: true; /** This claim of the key, see `LeaseClaim.generation`. */ generation: string }
  | { claimed: false; existing?: ExistingKey };

/** Phased mode: a claimed lease and what the earlier attempts committed. */
export type LeaseClaim =
  | {
      claimed: true;
      recoveryPoint: string | null;
      stepState: Record<string, unknown>;
      /** Identifies this claim of the key (its row's creation): a key claimed anew after it expired gets another. */
      generation: string;
    }
  | { claimed: false };

interface KeyRow {
  claimed: boolean;
  generation?: string | null;
  status: 'in_progress' | 'completed' | null;
  request_hash: string | null;
  response_code: number | null;
  response_headers: Record<string, string> | null;
  response_body: Buffer | null;
  expired: boolean;
  expires_in_ms: string | null;
  lease_seconds_left: number | null;
}

const SELECT_COLUMNS = `status, request_hash, response_code, response_headers, response_body,
  expires_at <= now() AS expired,
  floor(extract(epoch FROM expires_at - now()) * 1000)::bigint AS expires_in_ms,
  CASE WHEN locked_until > now() THEN ceil(extract(epoch FROM locked_until - now()))::integer END
    AS lease_seconds_left`;

const KEY_MATCHES = 'tenant_id = $1 AND endpoint = $2 AND idem_key = $3';

/** What `savepoint` sends, for a caller that sends it along with the claim. */
export const SAVEPOINT_STATEMENTS: readonly SqlStatement[] = [
  { text: 'SET LOCAL lock_timeout TO DEFAULT', values: [] },
  { text: 'SAVEPOINT idempotency_handler', values: [] },
];

/**
 * Every statement the library sends about keys lives here. Statements run on the current
 * transaction when there is one (`txHost.tx`), so the claim, the handler's writes and the
 * recorded response commit (or vanish) together; the phased mode's lease statements run on
 * their own, each committing at once.
 */
@Injectable()
export class IdempotencyKeyStore {
  constructor(private readonly transactions: TransactionHostRef) {}

  /**
   * Atomic mode. Inserts the `in_progress` claim; on conflict returns the existing row in the
   * same round trip. The unique primary key decides between racing processes, not process
   * memory. `existing` is absent when the twin committed after this statement's snapshot was
   * taken (it waited on the twin's lock): call `read` then.
   *
   * The read of the existing row is skipped by the planner (a one-time filter) when the insert
   * claimed the key: a successful claim costs no second index lookup.
   *
   * The wait behind an uncommitted twin is bounded by `lock_timeout`, set for this transaction
   * by `set_config(..., true)` in the row source: it runs before the insert looks for a
   * conflict, which saves the separate `SET LOCAL` round trip. Past it: SQLSTATE 55P03.
   */
  async claim(
    id: KeyId,
    requestHash: string,
    ttlSeconds: number,
    lockTimeoutMs: number,
  ): Promise<ClaimResult> {
    const { text, values } = this.claimStatement(id, requestHash, ttlSeconds, lockTimeoutMs);
    return this.claimResult(await this.claimQuery<KeyRow>(text, [...values]));
  }

  /** `claim`'s statement, for a caller that sends it along with START TRANSACTION. */
  claimStatement(id: KeyId, requestHash: string, ttlSeconds: number, lockTimeoutMs: number): SqlStatement {
    return {
      text: `WITH claim AS (
         INSERT INTO idempotency_keys (tenant_id, endpoint, idem_key, request_hash, status, expires_at)
         SELECT $1, $2, $3, $4, 'in_progress', now() + make_interval(secs => $5)
           FROM (SELECT set_config('lock_timeout', $6, true)) AS bounded_wait
         ON CONFLICT (tenant_id, endpoint, idem_key) DO NOTHING
         RETURNING true AS claimed, (extract(epoch FROM created_at) * 1000000)::bigint::text AS generation
       )
       SELECT claimed, generation, NULL AS status, NULL AS request_hash, NULL::integer AS response_code,
              NULL::jsonb AS response_headers, NULL::bytea AS response_body, false AS expired,
              NULL::bigint AS expires_in_ms, NULL::integer AS lease_seconds_left
         FROM claim
       UNION ALL
       SELECT false, NULL, ${SELECT_COLUMNS}
         FROM idempotency_keys
        WHERE ${KEY_MATCHES} AND NOT EXISTS (SELECT 1 FROM claim)`,
      values: [id.tenantId, id.scope, id.key, requestHash, ttlSeconds, `${Math.trunc(lockTimeoutMs)}ms`],
      name: 'claim',
    };
  }

  /** What the rows of `claimStatement` say; its lock timeout is the 409 case (`claimFailure`). */
  claimResult(rows: unknown[]): ClaimResult {
    const row = rows[0] as KeyRow | undefined;
    if (!row) return { claimed: false };
    if (row.claimed) return { claimed: true, generation: row.generation ?? '' };
    return { claimed: false, existing: toExistingKey(row) };
  }

  /**
   * A claim statement's error as the caller must see it: a lock timeout, or the serialization
   * failure of a stricter isolation level after the twin committed, are the 409 cases.
   */
  claimFailure(error: unknown): unknown {
    if (isLockTimeout(error)) return new ClaimConflictError(true);
    if (isSerializationFailure(error)) return new ClaimConflictError(false);
    return error;
  }

  /**
   * Phased mode. Claims a new key with a lease, or takes over an abandoned one: only an
   * `in_progress` row whose lease ran out, with the same fingerprint and within its time to
   * live. One conditional statement, so two retries racing for one expired lease cannot both
   * win: the second re-checks the row after the first updated it, and sees a live lease.
   */
  async claimLease(
    id: KeyId,
    requestHash: string,
    ttlSeconds: number,
    leaseSeconds: number,
    owner: string,
    lockTimeoutMs: number,
  ): Promise<LeaseClaim> {
    const rows: { recovery_point: string | null; step_state: Record<string, string> | null; generation: string }[] =
      await this.claimQuery(
        // A key in progress never expires under its retries: a takeover extends its time to
        // live, so the recovery points it holds are never thrown away for a fresh start.
        `INSERT INTO idempotency_keys AS k (tenant_id, endpoint, idem_key, request_hash, status,
                expires_at, locked_until, lease_owner, step_state)
         SELECT $1, $2, $3, $4, 'in_progress', now() + make_interval(secs => $5),
                now() + make_interval(secs => $6), $7, '{}'::jsonb
           FROM (SELECT set_config('lock_timeout', $8, true)) AS bounded_wait
         ON CONFLICT (tenant_id, endpoint, idem_key) DO UPDATE
            SET locked_until = EXCLUDED.locked_until, lease_owner = EXCLUDED.lease_owner,
                expires_at = GREATEST(k.expires_at, EXCLUDED.expires_at), updated_at = now()
          WHERE k.status = 'in_progress' AND k.locked_until <= now()
            AND k.request_hash = EXCLUDED.request_hash
         RETURNING k.recovery_point, k.step_state,
                   (extract(epoch FROM k.created_at) * 1000000)::bigint::text AS generation`,
        [
          id.tenantId,
          id.scope,
          id.key,
          requestHash,
          ttlSeconds,
          leaseSeconds,
          owner,
          `${Math.trunc(lockTimeoutMs)}ms`,
        ],
      );
    const row = rows[0];
    if (!row) return { claimed: false };
    // Each step's result is kept as JSON text, so its key order survives (jsonb would sort it).
    const stepState = Object.fromEntries(
      Object.entries(row.step_state ?? {}).map(([step, json]) => [step, JSON.parse(json)]),
    );
    return { claimed: true, recoveryPoint: row.recovery_point, stepState, generation: row.generation };
  }

  /** Reads the row that beat this claim. */
  async read(id: KeyId): Promise<ExistingKey | undefined> {
    const rows: KeyRow[] = await this.query(
      `SELECT false AS claimed, ${SELECT_COLUMNS} FROM idempotency_keys WHERE ${KEY_MATCHES}`,
      [id.tenantId, id.scope, id.key],
    );
    return rows[0] ? toExistingKey(rows[0]) : undefined;
  }

  /**
   * Removes a completed row past its time to live, so the key can be claimed as new. Rows in
   * progress are left alone: their recovery points outlive the time to live (the cleanup removes
   * them once abandoned).
   */
  async deleteExpired(id: KeyId): Promise<void> {
    await this.query(`DELETE FROM idempotency_keys WHERE ${KEY_MATCHES} AND expires_at <= now() AND status = 'completed'`, [
      id.tenantId,
      id.scope,
      id.key,
    ]);
  }

  /** Atomic mode: records the exact response; it commits with the handler's writes. */
  async complete(id: KeyId, response: StoredResponse): Promise<void> {
    const { text, values } = this.completeStatement(id, response);
    try {
      await this.query(text, [...values]);
    } catch (error) {
      throw this.completeFailure(error);
    }
  }

  /** `completeStatement`'s division by zero is a vanished claim: said plainly. */
  completeFailure(error: unknown): unknown {
    return sqlState(error) === '22012' ? new Error('idempotency key vanished before its response was recorded') : error;
  }

  /**
   * `complete`'s statement, for a caller that sends it along with COMMIT. It divides by the
   * number of rows it updated: were the claim's row gone, the statement would fail and take
   * the COMMIT after it down with it, rather than commit the handler's writes unrecorded.
   */
  completeStatement(id: KeyId, response: StoredResponse): SqlStatement {
    return {
      text: `WITH recorded AS (
         UPDATE idempotency_keys
            SET status = 'completed', response_code = $4, response_headers = $5,
                response_body = $6, updated_at = now()
          WHERE ${KEY_MATCHES} AND status = 'in_progress'
          RETURNING 1
       )
       SELECT 1 / count(*) AS recorded FROM recorded`,
      values: [id.tenantId, id.scope, id.key, response.statusCode, response.headers, response.body],
      name: 'record',
    };
  }

  /**
   * Phased mode: records a recovery point and its result, and renews the lease. Fenced by the
   * lease owner: false when another attempt took the key over, and the caller's transaction
   * must then roll back its step.
   */
  async recordStep(
    id: KeyId,
    owner: string,
    step: string,
    result: unknown,
    leaseSeconds: number,
  ): Promise<boolean> {
    const updated = await this.countUpdated(
      `UPDATE idempotency_keys
          SET recovery_point = $5,
              step_state = step_state || jsonb_build_object($5::text, $6::text),
              locked_until = now() + make_interval(secs => $7), updated_at = now()
        WHERE ${KEY_MATCHES} AND status = 'in_progress' AND lease_owner = $4`,
      [id.tenantId, id.scope, id.key, owner, step, JSON.stringify(result ?? null), leaseSeconds],
    );
    return updated === 1;
  }

  /** Phased mode: records the final response, fenced by the lease owner. */
  async completeLease(id: KeyId, owner: string, response: StoredResponse): Promise<boolean> {
    const updated = await this.countUpdated(
      `UPDATE idempotency_keys
          SET status = 'completed', recovery_point = 'finished', response_code = $5,
              response_headers = $6, response_body = $7, locked_until = NULL, updated_at = now()
        WHERE ${KEY_MATCHES} AND status = 'in_progress' AND lease_owner = $4`,
      [id.tenantId, id.scope, id.key, owner, response.statusCode, response.headers, response.body],
    );
    return updated === 1;
  }

  /** Phased mode: ends the lease now, so a retry after a transient failure resumes at once. */
  async releaseLease(id: KeyId, owner: string): Promise<void> {
    await this.query(
      `UPDATE idempotency_keys SET locked_until = now(), updated_at = now()
        WHERE ${KEY_MATCHES} AND status = 'in_progress' AND lease_owner = $4`,
      [id.tenantId, id.scope, id.key, owner],
    );
  }

  /**
   * Marks where a stored failure rolls the handler's writes back to, keeping the claim, and
   * gives the handler the usual `lock_timeout` back (the claim's bound is for the claim only).
   * Two statements in one round trip: no parameters, so the simple query protocol takes both.
   */
  async savepoint(): Promise<void> {
    await this.query(SAVEPOINT_STATEMENTS.map((statement) => statement.text).join('; '));
  }

  async rollbackToSavepoint(): Promise<void> {
    await this.query('ROLLBACK TO SAVEPOINT idempotency_handler');
  }

  private async query<T = unknown>(sql: string, params: unknown[] = []): Promise<T[]> {
    try {
      return await this.transactions.host.tx.query(sql, params);
    } catch (error) {
      // TypeORM keeps the bound parameters on the error; they hold the raw key, which must never
      // reach a log line.
      if (typeof error === 'object' && error !== null && 'parameters' in error) {
        (error as { parameters?: unknown }).parameters = ['[redacted]'];
      }
      throw error;
    }
  }

  /** A claim statement: its lock timeout is the 409 case, told apart from any other. */
  private async claimQuery<T>(sql: string, params: unknown[]): Promise<T[]> {
    try {
      return await this.query<T>(sql, params);
    } catch (error) {
      throw this.claimFailure(error);
    }
  }

  /** Row count of an UPDATE, as a SELECT so the driver's result has one shape. */
  private async countUpdated(update: string, params: unknown[]): Promise<number> {
    const rows = await this.query<{ updated: number }>(
      `WITH changed AS (${update} RETURNING 1) SELECT count(*)::integer AS updated FROM changed`,
      params,
    );
    return rows[0]?.updated ?? 0;
  }
}

function toExistingKey(row: KeyRow): ExistingKey {
  return {
    status: row.status ?? 'in_progress',
    requestHash: row.request_hash ?? '',
    expired: row.expired,
    expiresInMs: Number(row.expires_in_ms ?? 0),
    leaseSecondsLeft: row.lease_seconds_left ?? undefined,
    response:
      row.status === 'completed' && row.response_code !== null
        ? {
            statusCode: row.response_code,
            headers: row.response_headers ?? {},
            body: row.response_body ?? Buffer.alloc(0),
          }
        : undefined,
  };
}
