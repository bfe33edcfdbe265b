import type { DataSource } from 'typeorm';

// Any constant shared by every process of the demo; pg advisory locks are per database.
const MIGRATION_LOCK_ID = 7_341_000_001;

/**
 * Runs pending migrations under a session advisory lock, so that several demo processes
 * starting at once on one database do not race to create the same tables. `schema` is created
 * first when the app keeps its tables in a schema of its own (the provider stub).
 */
export async function runMigrations(dataSource: DataSource, options: { schema?: string } = {}): Promise<void> {
  const lock = dataSource.createQueryRunner();
  await lock.connect();
  try {
    await lock.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_ID]);
    if (options.schema) await lock.query(`CREATE SCHEMA IF NOT EXISTS "${options.schema}"`);
    await dataSource.runMigrations({ transaction: 'all' });
  } finally {
    await lock.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_ID]).catch(() => undefined);
    await lock.release();
  }
}
