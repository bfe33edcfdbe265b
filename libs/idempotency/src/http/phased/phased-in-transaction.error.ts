import { IdempotencyError } from '../../shared/idempotency-error';

/**
 * Phased mode met a transaction someone else opened: the claim and its lease, or an external
 * step's start, would commit only with that transaction, not before the call they guard, and
 * its rollback would take them back, so a retry could repeat a call that happened. A phased
 * route runs outside any transaction (an app's per-request one, a `@Transactional()` caller),
 * and calls `phases.external` outside the transactions of its own code.
 */
export class PhasedInTransactionError extends IdempotencyError {
  constructor(what: string) {
    super(
      `${what} inside a transaction that was already open: phased mode commits its claim and ` +
        "each external step's start on its own, before the call. Run the phased route outside " +
        'any transaction, and its external steps outside your own transactions.',
    );
  }
}
