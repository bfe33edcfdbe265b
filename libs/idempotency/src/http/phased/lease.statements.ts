import {
  KEY_MATCHES,
  keyValues,
  lockTimeoutSetting,
  responseValues,
} from '../idempotency-key.statements';
import type { KeyId } from '../key-id';
import type { RecordedStep } from '../sealing/record-sealer';
import type { RecordedResponse } from '../sealing/sealed-response';
import type { SqlStatement } from '../../shared/sql-literals';

// The phased mode's statements about a key's lease, as pure builders. Each runs on its own and
// commits at once (a step's runs in the step's transaction); every write after the claim is
// fenced by the lease owner, so an attempt that lost the key can change nothing.

/** A claimed lease and what the earlier attempts committed. */
export type LeaseClaim =
  | {
      claimed: true;
      recoveryPoint: string | null;
      stepState: Record<string, unknown>;
      /** The external steps started so far, recorded or not (see `recordStepStartStatement`). */
      startedSteps: string[];
      /** Identifies this claim of the key (its row's creation): a key claimed anew after it expired gets another. */
      generation: string;
    }
  | { claimed: false };

/**
 * Claims a new key with a lease, or takes over an abandoned one: only an `in_progress` row
 * whose lease ran out, with the same fingerprint and within its time to live. One conditional
 * statement, so two retries racing for one expired lease cannot both win: the second re-checks
 * the row after the first updated it, and sees a live lease. Its errors read as the atomic
 * claim's do (`claimFailure`).
 */
export function claimLeaseStatement(
  id: KeyId,
  requestHash: string,
  ttlSeconds: number,
  leaseSeconds: number,
  owner: string,
  lockTimeoutMs: number,
): SqlStatement {
  return {
    // A key in progress never expires under its retries: a takeover extends its time to
    // live, so the recovery points it holds are never thrown away for a fresh start.
    text: `INSERT INTO idempotency_keys AS k (tenant_id, endpoint, idem_key, request_hash, status,
                expires_at, locked_until, lease_owner, step_state)
         SELECT $1, $2, $3, $4, 'in_progress', now() + make_interval(secs => $5),
                now() + make_interval(secs => $6), $7, '{}'::jsonb
           FROM (SELECT set_config('lock_timeout', $8, true)) AS bounded_wait
         ON CONFLICT (tenant_id, endpoint, idem_key) DO UPDATE
            SET locked_until = EXCLUDED.locked_until, lease_owner = EXCLUDED.lease_owner,
                expires_at = GREATEST(k.expires_at, EXCLUDED.expires_at), updated_at = now()
          WHERE k.status = 'in_progress' AND k.locked_until <= now()
            AND k.request_hash = EXCLUDED.request_hash
         RETURNING k.recovery_point, k.step_state::text AS step_state,
                   array_to_json(k.started_steps)::text AS started_steps,
                   (extract(epoch FROM k.created_at) * 1000000)::bigint::text AS generation`,
    values: [
      ...keyValues(id),
      requestHash,
      ttlSeconds,
      leaseSeconds,
      owner,
      lockTimeoutSetting(lockTimeoutMs),
    ],
  };
}

/**
 * What the rows of `claimLeaseStatement` say: no row, no lease (someone else holds the key).
 * `readStep` turns a step's stored text into its JSON text (opens a sealed one). The jsonb and
 * the array arrive as text the library parses itself, so the app's own type parsers
 * (`pg.types.setTypeParser`) cannot change what a resumed attempt reads.
 */
export function leaseClaimFrom(
  rows: unknown[],
  readStep: (step: string, text: string) => string = (_step, text) => text,
): LeaseClaim {
  const row = rows[0] as
    | {
        recovery_point: string | null;
        step_state: string | null;
        started_steps?: string | null;
        generation: string;
      }
    | undefined;
  if (!row) return { claimed: false };
  // Each step's result is kept as JSON text, so its key order survives (jsonb would sort it).
  // SQL NULL and a JSON null both read as no step: neither is written by the library.
  const steps =
    (row.step_state ? (JSON.parse(row.step_state) as Record<string, string> | null) : null) ?? {};
  const stepState = Object.fromEntries(
    Object.entries(steps).map(([step, text]) => [step, JSON.parse(readStep(step, text))]),
  );
  return {
    claimed: true,
    recoveryPoint: row.recovery_point,
    stepState,
    startedSteps: row.started_steps ? (JSON.parse(row.started_steps) as string[]) : [],
    generation: row.generation,
  };
}

/** A step's result as JSON text, what `recordStepStatement` stores (sealed or not). */
export function stepJson(result: unknown): string {
  return JSON.stringify(result ?? null);
}

/**
 * Records the recovery point `step` and its result (`stepJson`, sealed when encryption is on),
 * and renews the lease from the statement's time (`clock_timestamp()`): `now()` is the step
 * transaction's start, and a step that ran longer than the lease would commit a lease already
 * over. Fenced by the lease owner: nothing changes when another attempt took
 * the key over (`fencedUpdateApplied`). `sealed_with` names the newest key that sealed
 * something in the row; each sealed step names its own key too.
 */
export function recordStepStatement(
  id: KeyId,
  owner: string,
  step: string,
  recorded: RecordedStep,
  leaseSeconds: number,
): SqlStatement {
  return {
    text: countingUpdated(
      `UPDATE idempotency_keys
          SET recovery_point = $5,
              step_state = step_state || jsonb_build_object($5::text, $6::text),
              sealed_with = COALESCE($8, sealed_with),
              locked_until = clock_timestamp() + make_interval(secs => $7), updated_at = now()
        WHERE ${KEY_MATCHES} AND status = 'in_progress' AND lease_owner = $4`,
    ),
    values: [...keyValues(id), owner, step, recorded.text, leaseSeconds, recorded.sealedWith],
  };
}

/**
 * Records that the external step `step` starts: committed before its call, so a resumed attempt
 * can tell a step that never started from an uncertain one (started, no result recorded). Renews
 * the lease for the call, and is fenced by the owner, so an attempt that lost the key never
 * makes the call.
 */
export function recordStepStartStatement(
  id: KeyId,
  owner: string,
  step: string,
  leaseSeconds: number,
): SqlStatement {
  return {
    text: countingUpdated(
      `UPDATE idempotency_keys
          SET started_steps = CASE WHEN $5::text = ANY(coalesce(started_steps, '{}'))
                                   THEN started_steps
                                   ELSE array_append(started_steps, $5::text) END,
              locked_until = clock_timestamp() + make_interval(secs => $6), updated_at = now()
        WHERE ${KEY_MATCHES} AND status = 'in_progress' AND lease_owner = $4`,
    ),
    values: [...keyValues(id), owner, step, leaseSeconds],
  };
}

/** Records the final response and ends the lease, fenced by the lease owner. */
export function completeLeaseStatement(
  id: KeyId,
  owner: string,
  response: RecordedResponse,
): SqlStatement {
  return {
    text: countingUpdated(
      `UPDATE idempotency_keys
          SET status = 'completed', recovery_point = 'finished', response_code = $5,
              response_headers = $6, response_body = $7, sealed_with = $8, locked_until = NULL,
              updated_at = now()
        WHERE ${KEY_MATCHES} AND status = 'in_progress' AND lease_owner = $4`,
    ),
    values: [...keyValues(id), owner, ...responseValues(response)],
  };
}

/** True when a fenced update changed the row: the lease was still this attempt's. */
export function fencedUpdateApplied(rows: unknown[]): boolean {
  return (rows[0] as { updated: string } | undefined)?.updated === '1';
}

/**
 * Ends the lease `holdSeconds` from now (0: at once, so a retry after a transient failure
 * resumes at once; more while a call this attempt gave up on may still land).
 */
export function releaseLeaseStatement(id: KeyId, owner: string, holdSeconds = 0): SqlStatement {
  return {
    // No owner from here on: a step of the ended attempt still running (a sibling of the one
    // that failed, under Promise.all) can neither record nor start, so it cannot renew the lease
    // the client's retry is about to take over.
    text: countingUpdated(
      `UPDATE idempotency_keys
          SET locked_until = now() + make_interval(secs => $5), lease_owner = NULL,
              updated_at = now()
        WHERE ${KEY_MATCHES} AND status = 'in_progress' AND lease_owner = $4`,
    ),
    values: [...keyValues(id), owner, holdSeconds],
  };
}

/**
 * Row count of an UPDATE, as a SELECT so the driver's result has one shape; as text, so an
 * app's own integer parser cannot change it.
 */
function countingUpdated(update: string): string {
  return `WITH changed AS (${update} RETURNING 1) SELECT count(*)::text AS updated FROM changed`;
}

/**
 * The result recorded for `step` under this attempt's lease, as `recordStepStatement` stored it
 * (`stepJson`, sealed or not); no row when it has none. Read after a transaction the step joined
 * has ended, to learn whether it committed.
 */
export function recordedStepStatement(id: KeyId, owner: string, step: string): SqlStatement {
  return {
    text: `SELECT step_state ->> $5 AS step FROM idempotency_keys
            WHERE ${KEY_MATCHES} AND lease_owner = $4 AND step_state ? $5`,
    values: [...keyValues(id), owner, step],
  };
}
