import type { EmbeddedPostgresHandle } from '#tools/embedded-postgres';

/** Shared by globalSetup and globalTeardown, which Jest runs in one process. */
interface TestState {
  embedded?: { handle: EmbeddedPostgresHandle; dataDir: string };
}
const scope = globalThis as { __IDEMPOTENCY_TEST_STATE__?: TestState };
export const TEST_STATE: TestState = (scope.__IDEMPOTENCY_TEST_STATE__ ??= {});
