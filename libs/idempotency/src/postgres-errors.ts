/** SQLSTATE 55P03 lock_not_available: `lock_timeout` expired while waiting on a twin's claim. */
export function isLockTimeout(error: unknown): boolean {
  return sqlState(error) === '55P03';
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
