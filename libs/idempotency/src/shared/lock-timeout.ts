/**
 * A claim's bound on lock waits, and the way back to the `lock_timeout` the transaction had
 * before it. `SET LOCAL lock_timeout TO DEFAULT` would give the server's default, losing a value
 * the app set on its session (`SET lock_timeout` in a pool's connect hook). So a bound keeps the
 * value it replaces in a placeholder setting of the transaction (gone at its end), and
 * `RESTORE_LOCK_TIMEOUT` sets it back and empties the placeholder. A bound that follows another
 * with no restore between (a claim retried after an expired row) keeps the first value.
 */
const SAVED = 'idempotency.lock_timeout_before';

/**
 * An SQL expression that sets `lock_timeout` to `value` (an SQL text expression, e.g. `$6`) for
 * this transaction, after keeping the value it replaces; it evaluates to the new value. The
 * save is an argument of the outer `set_config`, so it runs first: `left(..., 0)` adds nothing.
 */
export function boundLockTimeout(value: string): string {
  const kept = `COALESCE(NULLIF(current_setting('${SAVED}', true), ''), current_setting('lock_timeout'))`;
  return `set_config('lock_timeout', ${value} || left(set_config('${SAVED}', ${kept}, true), 0), true)`;
}

/**
 * Gives the transaction back the `lock_timeout` it had before the bound, and forgets it: a later
 * claim in the same transaction (the app's own, around several) keeps what is current then. The
 * placeholder is read before it is emptied (arguments run in order, as above).
 */
export const RESTORE_LOCK_TIMEOUT = `SELECT set_config('lock_timeout', current_setting('${SAVED}') || left(set_config('${SAVED}', '', true), 0), true)`;
