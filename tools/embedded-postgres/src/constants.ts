/** The superuser initdb creates, and the account PostgreSQL runs as under root. */
export const POSTGRES_USER = 'postgres';
export const PASSWORD = 'postgres';
/** Loopback only: the server is for this machine's demo and tests. */
export const HOST = '127.0.0.1';
export const DEFAULT_START_TIMEOUT_MS = 30_000;
/** How long a postmaster gets to shut down after SIGINT before SIGKILL. */
export const SIGINT_GRACE_MS = 5_000;
/** How long we wait for a process to disappear after SIGKILL. */
export const SIGKILL_GRACE_MS = 5_000;
