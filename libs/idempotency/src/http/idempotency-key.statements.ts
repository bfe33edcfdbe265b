import type { ExistingKey } from './existing-key';
import type { StoredResponse } from './idempotency.options';
import type { KeyId } from './key-id';
import { isSealed, type RecordedResponse } from './sealing/sealed-response';
import {
  ClaimConflictError,
  isLockTimeout,
  isQueryCanceled,
  isSerializationFailure,
  sqlState,
} from '../shared/postgres-errors';
import { boundLockTimeout, RESTORE_LOCK_TIMEOUT } from '../shared/lock-timeout';
import type { SqlStatement } from '../shared/sql-literals';

// The statements about keys, as pure builders: text and values, nothing sent. Who sends them
// decides the round trips: `IdempotencyKeyStore` one at a time on the current transaction, the
// atomic runner along with START TRANSACTION and COMMIT, the cleanup in batches of its own. The
// phased mode's lease statements live beside its runner (`phased/lease.statements.ts`). A key
// and everything else a client sends are values ($n), never part of the text.

/** A claim of the key: in this transaction (atomic mode), see `LeaseClaim` for the phased one. */
export type ClaimResult =
  | { claimed: true; /** This claim of the key, see `LeaseClaim.generation`. */ generation: string }
  | { claimed: false; existing?: ExistingKey };

/** One key, always `$1..$3` in that order: `keyValues(id)` gives their values. */
export const KEY_MATCHES = 'tenant_id = $1 AND endpoint = $2 AND idem_key = $3';

export function keyValues(id: KeyId): [string, string, string] {
  return [id.tenantId, id.scope, id.key];
}

/** `lock_timeout` as `set_config` takes it: whole milliseconds, with their unit. */
export function lockTimeoutSetting(lockTimeoutMs: number): string {
  return `${Math.trunc(lockTimeoutMs)}ms`;
}

/**
 * A row of `claimStatement` or `readStatement`: the claim's generation, or the row that was
 * there as the JSON text of `EXISTING_KEY`. Two columns where the row's own would be eleven:
 * node-postgres parses a row description and builds a parser per column for every result,
 * about 100,000 instructions per create for the eleven, and the usual claim, which wins, needs
 * the generation alone. Text rather than json, so that an app's own type parsers for json
 * (`pg.types.setTypeParser`) cannot change what the library reads.
 */
interface ClaimRow {
  generation?: string | null;
  existing: string | null;
}

/** The JSON of `EXISTING_KEY`, parsed. */
interface ExistingKeyJson {
  status: 'in_progress' | 'completed';
  requestHash: string;
  responseCode: number | null;
  responseHeaders: StoredResponse['headers'] | null;
  /** The body (or the sealed envelope) in hex: JSON has no bytes. */
  responseBody: string | null;
  sealedWith: string | null;
  expired: boolean;
  expiresInMs: number;
  leaseSecondsLeft: number | null;
}

/**
 * The row of a key as one JSON text; its times come from the database's clock. `expired` is
 * judged at the transaction's start, as the cleanup judges it; the time left for the replay
 * cache is counted from the moment of reading, since a claim may have waited on a twin for
 * seconds since its transaction began.
 */
const EXISTING_KEY = `json_build_object(
    'status', status, 'requestHash', request_hash, 'responseCode', response_code,
    'responseHeaders', response_headers, 'responseBody', encode(response_body, 'hex'),
    'sealedWith', sealed_with, 'expired', expires_at <= now(),
    'expiresInMs', floor(extract(epoch FROM expires_at - clock_timestamp()) * 1000)::bigint,
    'leaseSecondsLeft',
    CASE WHEN locked_until > now() THEN ceil(extract(epoch FROM locked_until - now()))::integer END
  )::text`;

/**
 * Atomic mode. Inserts the `in_progress` claim; on conflict returns the existing row in the
 * same round trip. The unique primary key decides between racing processes, not process
 * memory. Its rows (`claimResultFrom`) have no `existing` when the twin committed after this
 * statement's snapshot was taken (it waited on the twin's lock): read it then.
 *
 * The read of the existing row is skipped by the planner (a one-time filter) when the insert
 * claimed the key: a successful claim costs no second index lookup.
 *
 * The wait behind an uncommitted twin is bounded by `lock_timeout`, set for this transaction
 * by `set_config(..., true)` in the row source: it runs before the insert looks for a
 * conflict, which saves the separate `SET LOCAL` round trip. Past it: SQLSTATE 55P03. The
 * value it replaced is kept for `SAVEPOINT_STATEMENTS` to restore (`boundLockTimeout`).
 */
export function claimStatement(
  id: KeyId,
  requestHash: string,
  ttlSeconds: number,
  lockTimeoutMs: number,
): SqlStatement {
  return {
    text: `WITH claim AS (
         INSERT INTO idempotency_keys (tenant_id, endpoint, idem_key, request_hash, status, expires_at)
         SELECT $1, $2, $3, $4, 'in_progress', now() + make_interval(secs => $5)
           FROM (SELECT ${boundLockTimeout('$6')}) AS bounded_wait
         ON CONFLICT (tenant_id, endpoint, idem_key) DO NOTHING
         RETURNING (extract(epoch FROM created_at) * 1000000)::bigint::text AS generation
       )
       SELECT generation, NULL::text AS existing FROM claim
       UNION ALL
       SELECT NULL, ${EXISTING_KEY}
         FROM idempotency_keys
        WHERE ${KEY_MATCHES} AND NOT EXISTS (SELECT 1 FROM claim)`,
    values: [...keyValues(id), requestHash, ttlSeconds, lockTimeoutSetting(lockTimeoutMs)],
    name: 'claim',
  };
}

/** What the rows of `claimStatement` say. */
export function claimResultFrom(rows: unknown[]): ClaimResult {
  const row = rows[0] as ClaimRow | undefined;
  if (!row) return { claimed: false };
  if (!row.existing) return { claimed: true, generation: row.generation ?? '' };
  return { claimed: false, existing: toExistingKey(row.existing) };
}

/**
 * A claim statement's error (this one's or the phased mode's) as the caller must see it: a
 * lock timeout (or the app's `statement_timeout`, shorter than `lockTimeoutMs`, ending the
 * same wait), or the serialization failure of a stricter isolation level after the twin
 * committed, are the 409 cases.
 */
export function claimFailure(error: unknown): unknown {
  if (isLockTimeout(error) || isQueryCanceled(error)) return new ClaimConflictError(true);
  if (isSerializationFailure(error)) return new ClaimConflictError(false);
  return error;
}

/** Reads the row that beat a claim, with a fresh snapshot. */
export function readStatement(id: KeyId): SqlStatement {
  return {
    text: `SELECT ${EXISTING_KEY} AS existing FROM idempotency_keys WHERE ${KEY_MATCHES}`,
    values: keyValues(id),
  };
}

/** What the rows of `readStatement` say: undefined when the row is gone. */
export function existingKeyFrom(rows: unknown[]): ExistingKey | undefined {
  const row = rows[0] as ClaimRow | undefined;
  return row?.existing ? toExistingKey(row.existing) : undefined;
}

/**
 * Removes a completed row past its time to live, so the key can be claimed as new. Rows in
 * progress are left alone: their recovery points outlive the time to live (the cleanup removes
 * them once abandoned). A twin deleting the same row, or the cleanup, may hold it: the wait is
 * bounded as the claim's is (a one-time filter sets the bound before the row is locked), and
 * its lock timeout is the claim's 409 (`claimFailure`).
 */
export function deleteExpiredStatement(id: KeyId, lockTimeoutMs: number): SqlStatement {
  return {
    text: `DELETE FROM idempotency_keys
            WHERE ${KEY_MATCHES} AND expires_at <= now() AND status = 'completed'
              AND (SELECT ${boundLockTimeout('$4')}) IS NOT NULL`,
    values: [...keyValues(id), lockTimeoutSetting(lockTimeoutMs)],
  };
}

/**
 * Atomic mode: records the exact response (sealed already, when encryption is on); it commits
 * with the handler's writes. It divides by the number of rows it updated: were the claim's row
 * gone, the statement would fail and take a COMMIT sent after it down with it, rather than
 * commit the handler's writes unrecorded.
 */
export function recordStatement(id: KeyId, response: RecordedResponse): SqlStatement {
  return {
    text: `WITH recorded AS (
         UPDATE idempotency_keys
            SET status = 'completed', response_code = $4, response_headers = $5,
                response_body = $6, sealed_with = $7, updated_at = now()
          WHERE ${KEY_MATCHES} AND status = 'in_progress'
          RETURNING 1
       )
       SELECT 1 / count(*) AS recorded FROM recorded`,
    values: [...keyValues(id), ...responseValues(response)],
    name: 'record',
  };
}

/**
 * `response_code`, `response_headers`, `response_body`, `sealed_with`: a sealed response keeps
 * its headers inside the envelope in `response_body`; a plain one leaves `sealed_with` null.
 */
export function responseValues(
  response: RecordedResponse,
): [number, StoredResponse['headers'] | null, Buffer, string | null] {
  return isSealed(response)
    ? [response.statusCode, null, response.envelope, response.sealedWith]
    : [response.statusCode, response.headers, response.body, null];
}

/** `recordStatement`'s division by zero is a vanished claim: said plainly. */
export function recordFailure(error: unknown): unknown {
  return sqlState(error) === '22012'
    ? new Error('idempotency key vanished before its response was recorded')
    : error;
}

/** Gives the transaction back the `lock_timeout` the claim's bound replaced (`RESTORE_LOCK_TIMEOUT`). */
export const RESTORE_LOCK_TIMEOUT_STATEMENT: SqlStatement = {
  text: RESTORE_LOCK_TIMEOUT,
  values: [],
};

/**
 * Marks where a stored failure rolls the handler's writes back to, keeping the claim, and
 * gives the handler the `lock_timeout` it had before the claim (the claim's bound is for the
 * claim only; `RESTORE_LOCK_TIMEOUT`). Two statements, for a caller that sends them along with
 * the claim.
 */
export const SAVEPOINT_STATEMENTS: readonly SqlStatement[] = [
  RESTORE_LOCK_TIMEOUT_STATEMENT,
  { text: 'SAVEPOINT idempotency_handler', values: [] },
];

/** `SAVEPOINT_STATEMENTS` in one round trip: no parameters, so the simple query protocol takes both. */
export const SAVEPOINT: SqlStatement = {
  text: SAVEPOINT_STATEMENTS.map((statement) => statement.text).join('; '),
  values: [],
};

export const ROLLBACK_TO_SAVEPOINT: SqlStatement = {
  text: 'ROLLBACK TO SAVEPOINT idempotency_handler',
  values: [],
};

/**
 * One batch of the cleanup (`IdempotencyCleanup`): at most `batchSize` keys past their time to
 * live, none whose lease is live or that another transaction holds. Its one row says how many
 * went (`removed`).
 */
export function purgeExpiredStatement(batchSize: number): SqlStatement {
  return {
    text: `WITH doomed AS (
         SELECT tenant_id, endpoint, idem_key
           FROM idempotency_keys
          WHERE expires_at <= now()
            AND (status = 'completed' OR locked_until IS NULL OR locked_until <= now())
          ORDER BY expires_at
          LIMIT $1
          FOR UPDATE SKIP LOCKED
       ), deleted AS (
         DELETE FROM idempotency_keys AS k
          USING doomed AS d
          WHERE k.tenant_id = d.tenant_id AND k.endpoint = d.endpoint AND k.idem_key = d.idem_key
         RETURNING 1
       )
       SELECT count(*)::text AS removed FROM deleted`,
    values: [batchSize],
  };
}

function toExistingKey(json: string): ExistingKey {
  const row = JSON.parse(json) as ExistingKeyJson;
  return {
    status: row.status,
    requestHash: row.requestHash,
    expired: row.expired,
    expiresInMs: row.expiresInMs,
    leaseSecondsLeft: row.leaseSecondsLeft ?? undefined,
    response:
      row.status === 'completed' && row.responseCode !== null
        ? recordedResponse(row, row.responseCode)
        : undefined,
  };
}

function recordedResponse(row: ExistingKeyJson, statusCode: number): RecordedResponse {
  const body = row.responseBody === null ? Buffer.alloc(0) : Buffer.from(row.responseBody, 'hex');
  if (row.sealedWith === null) return { statusCode, headers: row.responseHeaders ?? {}, body };
  return { statusCode, sealedWith: row.sealedWith, envelope: body };
}
