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
 * The claim met a twin with the same key, and only the claim's own error becomes a 409 (a lock
 * timeout inside the handler is the handler's failure). Either it waited `lock_timeout` behind
 * the uncommitted twin (`lockTimeout`), or the twin committed while it waited under an isolation
 * level stricter than READ COMMITTED, where this transaction may not read the twin's row: the
 * retry, in a new transaction, gets the replay.
 */
export class ClaimConflictError extends Error {
  constructor(readonly lockTimeout: boolean) {
    super(
      lockTimeout
        ? 'the claim timed out waiting for a concurrent request with the same key'
        : 'the claim met a concurrent request with the same key that committed meanwhile',
    );
    this.name = 'ClaimConflictError';
  }
}
