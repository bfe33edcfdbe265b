/** SQLSTATE 55P03 lock_not_available: `lock_timeout` expired while waiting on a twin's claim. */
export function isLockTimeout(error: unknown): boolean {
  return sqlState(error) === '55P03';
}

/**
 * SQLSTATE 40001 serialization_failure: under REPEATABLE READ or SERIALIZABLE, what a claim that
 * waited on a twin gets once the twin commits (READ COMMITTED would see the twin's row instead).
 */
export function isSerializationFailure(error: unknown): boolean {
  return sqlState(error) === '40001';
}

/** SQLSTATE of a pg error, directly or wrapped by TypeORM's QueryFailedError. */
export function sqlState(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const candidate = error as { code?: unknown; driverError?: { code?: unknown } };
  const code = candidate.driverError?.code ?? candidate.code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * The claim itself waited `lock_timeout` behind an uncommitted twin. Only this becomes a 409:
 * a lock timeout inside the handler is the handler's own failure.
 */
export class ClaimLockTimeoutError extends Error {
  constructor() {
    super('the claim timed out waiting for a concurrent request with the same key');
    this.name = 'ClaimLockTimeoutError';
  }
}

/**
 * The claim waited on a twin that committed, under an isolation level stricter than READ
 * COMMITTED: this transaction may not read the twin's row. A 409 with Retry-After; the retry,
 * in a new transaction, gets the replay.
 */
export class ClaimSerializationError extends Error {
  constructor() {
    super('the claim met a concurrent request with the same key that committed meanwhile');
    this.name = 'ClaimSerializationError';
  }
}
