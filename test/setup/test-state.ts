import type { EmbeddedPostgresHandle } from '#tools/embedded-postgres';

/** Shared by globalSetup and globalTeardown, which Jest runs in one process. */
export const TEST_STATE: { embedded?: { handle: EmbeddedPostgresHandle; dataDir: string } } = ((
  globalThis as Record<string, unknown>
).__IDEMPOTENCY_TEST_STATE__ ??= {}) as never;
