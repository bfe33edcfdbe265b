import { mkdirSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { findFreePort, startEmbeddedPostgres } from '../../apps/payments-api/src/database/embedded-postgres';
import { TEST_STATE } from './test-state';

/**
 * One PostgreSQL for the whole run: `DATABASE_URL` when set (use a throwaway database), else an
 * embedded one in a fresh directory, removed again by the teardown. Workers and the app
 * processes the tests spawn inherit `DATABASE_URL` from here; each app runs the migrations at
 * start, as the demo does, under an advisory lock.
 */
export default async function globalSetup(): Promise<void> {
  if (!process.env.DATABASE_URL) {
    const dataDir = resolve(__dirname, '../../.data', `test-postgres-${process.pid}`);
    rmSync(dataDir, { recursive: true, force: true });
    mkdirSync(dataDir, { recursive: true });
    const handle = await startEmbeddedPostgres({
      dataDir,
      port: await findFreePort(),
      database: 'idempotency_test',
      log: () => undefined,
    });
    TEST_STATE.embedded = { handle, dataDir };
    process.env.DATABASE_URL = handle.url;
    // eslint-disable-next-line no-console
    console.log(`\nDATABASE_URL not set: embedded PostgreSQL at ${handle.url}`);
  }
}
