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

/**
 * SQLSTATE 57014 query_canceled: the app's `statement_timeout` (or a cancel request) ended a
 * statement. Met by a claim, it ended the claim's wait on a twin before `lock_timeout` did.
 */
export function isQueryCanceled(error: unknown): boolean {
  return sqlState(error) === '57014';
}

/**
 * SQLSTATE 42P01 undefined_table naming the key table: the library's migrations never ran on
 * this database (or the connection's `search_path` does not reach their schema).
 */
export function isMissingKeyTable(error: unknown): boolean {
  if (sqlState(error) !== '42P01') return false;
  const message = (error as { message?: unknown }).message;
  return typeof message === 'string' && message.includes('"idempotency_keys"');
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

/** SQLSTATEs that say the server went away or cannot take the connection, not that the SQL failed. */
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '57P05', '53300']);

/**
 * Class 08 is the connection's, but 08P01 (protocol_violation) is a statement's bug, e.g. a bind
 * with too few parameters: severity ERROR, and the session goes on.
 */
const PROTOCOL_VIOLATION = '08P01';

/**
 * A FATAL error ends the session. PgBouncer sends every error of its own as FATAL 08P01 and closes
 * the connection: its server logins failing ("server login has been failing, try again later
 * (server_login_retry)", for up to 15 s after a RECONNECT caught a login), `query_wait_timeout`,
 * a server connection lost under the client.
 */
const SESSION_ENDED = 'FATAL';

/** Socket errors of a connection that could not be made or was cut. */
const UNAVAILABLE_SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);

/** node-postgres (client and pool) reports a lost or refused connection with these, and no code. */
const UNAVAILABLE_MESSAGES = [
  'Connection terminated',
  'Client has encountered a connection error',
  'Client was closed and is not queryable',
  'timeout exceeded when trying to connect',
];

/**
 * TypeORM releases a query runner whose connection emitted an error, and every later statement
 * on it throws one of these (the second from an entity manager's `query` and `transaction`). A
 * request's own runner is released only when its transaction ends, after the handler: met
 * during the request, they mean the connection was lost under it.
 */
const RELEASED_RUNNER = new Set([
  'QueryRunnerAlreadyReleasedError',
  'QueryRunnerProviderAlreadyReleasedError',
]);

/**
 * Whether an error says the database could not be reached, rather than that a statement failed:
 * a refused, reset or cut connection, the server shutting down or starting (SQLSTATE class 08
 * but an ERROR 08P01, 57P01 to 57P03, 57P05), a pooler that closed the connection (PgBouncer's
 * FATAL 08P01), too many connections (53300), a pool that could not get one
 * in time, or a TypeORM query runner released after its connection failed. Such a failure is
 * transient: nothing was committed unless the COMMIT itself was cut off, and a retry with the
 * same key is answered correctly either way. Looks through TypeORM's `driverError` and an
 * `AggregateError` (several addresses refused), but not through `cause`, and never takes an
 * HttpException: an HTTP client's refused connection, wrapped in the app's 502, is not the
 * database's.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  return unavailable(error, 0);
}

function unavailable(error: unknown, depth: number): boolean {
  if (typeof error !== 'object' || error === null || depth > 4) return false;
  const { name, code, severity, message, driverError, errors, getStatus } = error as {
    name?: unknown;
    code?: unknown;
    severity?: unknown;
    message?: unknown;
    driverError?: unknown;
    errors?: unknown;
    getStatus?: unknown;
  };
  if (typeof getStatus === 'function') return false; // an HttpException: the app's own answer
  if (typeof name === 'string' && RELEASED_RUNNER.has(name)) return true;
  if (typeof code === 'string') {
    if (code.length === 5 && code.startsWith('08')) {
      if (code !== PROTOCOL_VIOLATION || severity === SESSION_ENDED) return true;
    }
    if (UNAVAILABLE_SQLSTATES.has(code) || UNAVAILABLE_SOCKET_CODES.has(code)) return true;
  }
  if (
    typeof message === 'string' &&
    UNAVAILABLE_MESSAGES.some((known) => message.startsWith(known))
  )
    return true;
  if (unavailable(driverError, depth + 1)) return true;
  return Array.isArray(errors) && errors.some((inner) => unavailable(inner, depth + 1));
}
