import { Injectable } from '@nestjs/common';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import type { QueryRunner } from 'typeorm';
import type { StoredResponse } from './idempotency.options';

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
  response?: StoredResponse;
}

export type ClaimResult = { claimed: true } | { claimed: false; existing?: ExistingKey };

interface KeyRow {
  claimed: boolean;
  status: 'in_progress' | 'completed' | null;
  request_hash: string | null;
  response_code: number | null;
  response_headers: Record<string, string> | null;
  response_body: Buffer | null;
  expired: boolean;
}

const SELECT_COLUMNS = `status, request_hash, response_code, response_headers, response_body,
  expires_at <= now() AS expired`;

/**
 * Every statement the library sends about keys lives here. Each runs on the transaction the
 * interceptor opened, so the claim, the handler's writes and the recorded response commit
 * (or vanish) together.
 */
@Injectable()
export class IdempotencyKeyStore {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  /**
   * Inserts the `in_progress` claim; on conflict returns the existing row in the same round
   * trip. The unique primary key decides between racing processes, not process memory.
   * `existing` is absent when the twin committed after this statement's snapshot was taken
   * (it waited on the twin's lock): call `read` then.
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
    const rows: KeyRow[] = await this.runner().query(
      `WITH claim AS (
         INSERT INTO idempotency_keys (tenant_id, endpoint, idem_key, request_hash, status, expires_at)
         SELECT $1, $2, $3, $4, 'in_progress', now() + make_interval(secs => $5)
           FROM (SELECT set_config('lock_timeout', $6, true)) AS bounded_wait
         ON CONFLICT (tenant_id, endpoint, idem_key) DO NOTHING
         RETURNING true AS claimed
       )
       SELECT claimed, NULL AS status, NULL AS request_hash, NULL::integer AS response_code,
              NULL::jsonb AS response_headers, NULL::bytea AS response_body, false AS expired
         FROM claim
       UNION ALL
       SELECT false, ${SELECT_COLUMNS}
         FROM idempotency_keys
        WHERE tenant_id = $1 AND endpoint = $2 AND idem_key = $3`,
      [id.tenantId, id.scope, id.key, requestHash, ttlSeconds, `${Math.trunc(lockTimeoutMs)}ms`],
    );
    const row = rows[0];
    if (!row) return { claimed: false };
    if (row.claimed) return { claimed: true };
    return { claimed: false, existing: toExistingKey(row) };
  }

  /** Reads the row that beat this transaction's claim. */
  async read(id: KeyId): Promise<ExistingKey | undefined> {
    const rows: KeyRow[] = await this.runner().query(
      `SELECT false AS claimed, ${SELECT_COLUMNS}
         FROM idempotency_keys
        WHERE tenant_id = $1 AND endpoint = $2 AND idem_key = $3`,
      [id.tenantId, id.scope, id.key],
    );
    return rows[0] ? toExistingKey(rows[0]) : undefined;
  }

  /** Removes a row past its time to live, so the key can be claimed as new. */
  async deleteExpired(id: KeyId): Promise<void> {
    await this.runner().query(
      `DELETE FROM idempotency_keys
        WHERE tenant_id = $1 AND endpoint = $2 AND idem_key = $3 AND expires_at <= now()`,
      [id.tenantId, id.scope, id.key],
    );
  }

  /** Records the exact response; it commits with the handler's writes. */
  async complete(id: KeyId, response: StoredResponse): Promise<void> {
    const result = await this.runner().query(
      `UPDATE idempotency_keys
          SET status = 'completed', response_code = $4, response_headers = $5,
              response_body = $6, updated_at = now()
        WHERE tenant_id = $1 AND endpoint = $2 AND idem_key = $3 AND status = 'in_progress'`,
      [id.tenantId, id.scope, id.key, response.statusCode, response.headers, response.body],
      true,
    );
    if (result.affected !== 1) {
      throw new Error('idempotency key vanished before its response was recorded');
    }
  }

  /** Marks where a stored failure rolls the handler's writes back to, keeping the claim. */
  async savepoint(): Promise<void> {
    await this.runner().query('SAVEPOINT idempotency_handler');
  }

  async rollbackToSavepoint(): Promise<void> {
    await this.runner().query('ROLLBACK TO SAVEPOINT idempotency_handler');
  }

  private runner(): QueryRunner {
    const runner = this.txHost.tx.queryRunner;
    if (!runner || !runner.isTransactionActive) {
      throw new Error('IdempotencyKeyStore used outside the idempotency transaction');
    }
    return runner;
  }
}

function toExistingKey(row: KeyRow): ExistingKey {
  return {
    status: row.status ?? 'in_progress',
    requestHash: row.request_hash ?? '',
    expired: row.expired,
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
