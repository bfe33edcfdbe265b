import { type DataSource, MigrationExecutor } from 'typeorm';

// Any constant shared by every process of the demo; pg advisory locks are per database.
export const MIGRATION_LOCK_ID = 7_341_000_001;

/**
 * Runs pending migrations in one transaction that first takes a transaction-level advisory
 * lock, so that several demo processes starting at once on one database do not race to create
 * the same tables. A transaction keeps its server session behind a pooler in transaction mode
 * too, where a session lock and its unlock could land on two sessions and the lock stay held.
 * `schema` is created first when the app keeps its tables in a schema of its own (the stub).
 */
export async function runMigrations(
  dataSource: DataSource,
  options: { schema?: string } = {},
): Promise<void> {
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  try {
    await runner.startTransaction();
    await runner.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_ID]);
    if (options.schema) await runner.query(`CREATE SCHEMA IF NOT EXISTS "${options.schema}"`);
    const executor = new MigrationExecutor(dataSource, runner);
    executor.transaction = 'all'; // joins the transaction above
    await executor.executePendingMigrations();
    await runner.commitTransaction();
  } catch (error) {
    if (runner.isTransactionActive) await runner.rollbackTransaction().catch(() => undefined);
    throw error;
  } finally {
    await runner.release();
  }
}
