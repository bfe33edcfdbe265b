import type { UnreadableRecordReason } from '../sealing/record-cipher';

/**
 * The `node:diagnostics_channel` channel on which every event that `onEvent` receives is also
 * published (the message is the `IdempotencyEvent`). Subscribe with
 * `diagnostics_channel.subscribe(IDEMPOTENCY_DIAGNOSTICS_CHANNEL, listener)`.
 */
export const IDEMPOTENCY_DIAGNOSTICS_CHANNEL = 'nestjs-pg-idempotency:event';

/** What happened to one request (or one cleanup run); see `IdempotencyModuleOptions.onEvent`. */
export type IdempotencyEventType =
  /** The key was claimed: the handler runs. Carries `claimMs`. */
  | 'claimed'
  /** A completed key was replayed. */
  | 'replayed'
  /** 409: the key's request is still running (a live lease, or a committed in-progress row). */
  | 'in_progress'
  /** 409: the claim waited `lockTimeoutMs` behind an uncommitted twin and gave up. */
  | 'lock_timeout'
  /** 422: the key was reused with a different request. */
  | 'fingerprint_mismatch'
  /** 400: the key header was missing or malformed. */
  | 'rejected_key'
  /** 400: the request nests deeper than `MAX_BODY_DEPTH` or holds a number out of range. */
  | 'unfingerprintable_request'
  /**
   * 500: the key's row holds a sealed record (option `encryption`) that no listed key opens; the
   * handler was not run again. Carries `reason`.
   */
  | 'unreadable_record'
  /** The handler succeeded and its response was recorded. */
  | 'completed'
  /** The handler failed deterministically; the failure was recorded and will be replayed. */
  | 'stored_failure'
  /** The handler failed transiently; the key was released (atomic) or its lease ended (phased). */
  | 'released'
  /**
   * Phased: a resumed attempt found the external step `step` started but its result not
   * recorded (the earlier attempt died, or failed, during or right after the call): its outcome
   * is uncertain. `reconcile` runs next if the step has one; else the call is made again.
   */
  | 'step_uncertain'
  /** Phased: the uncertain step `step` was reconciled; `found` says whether its outcome was. */
  | 'step_reconciled'
  /** A cleanup batch removed expired rows. Carries `count`. */
  | 'expired_removed'
  /**
   * The handler wrote `entity` through TypeORM outside the request's transaction (the classic
   * bug): refused with `writeGuard: 'throw'`, let through with `'warn'`. One per such write.
   */
  | 'write_outside_transaction';

export interface IdempotencyEvent {
  type: IdempotencyEventType;
  /** The route's scope, e.g. `POST /v1/orders` (absent for cleanup). */
  scope?: string;
  /** `atomic` or `phased` (absent for cleanup); a rejected key carries its route's mode too. */
  mode?: 'atomic' | 'phased';
  /** The request's HTTP status, for request outcomes. */
  statusCode?: number;
  /** Whole request through the library, in ms, for request outcomes. */
  durationMs?: number;
  /** The claim statement(s) alone, in ms, on `claimed` (and on outcomes decided by the claim). */
  claimMs?: number;
  /**
   * On `unreadable_record`: `unknown_key` (no listed key has the record's key id), `authentication_failed`
   * (the tag does not verify: wrong key material, a record copied from another key, tampering),
   * `malformed`, or `unsealed_refused` (a plain row with `unsealedRows: 'refuse'`).
   */
  reason?: UnreadableRecordReason;
  /** The phased step concerned, on `step_uncertain` and `step_reconciled`. */
  step?: string;
  /** On `step_reconciled`: true when `reconcile` found the outcome (the call is not made again). */
  found?: boolean;
  /** Rows removed, on `expired_removed`. */
  count?: number;
  /** The entity written outside the request's transaction, on `write_outside_transaction`. */
  entity?: string;
}
