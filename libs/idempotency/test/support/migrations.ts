import { idempotencyMigrations } from 'nestjs-pg-idempotency';
import { messagingMigrations } from 'nestjs-pg-idempotency/messaging';
import { type DataSource, MigrationExecutor } from 'typeorm';

/** What a user's app that takes both entry points runs: the library's tables, nothing else. */
export const libraryMigrations = [...idempotencyMigrations, ...messagingMigrations];

/**
 * The suites' own tables, where their handlers record side effects. Created in the migrations'
 * transaction, under its lock: two workers racing on `CREATE TABLE IF NOT EXISTS` can still
 * collide in the catalog.
 */
const TEST_TABLES = [
  `CREATE TABLE IF NOT EXISTS library_test_effects (id serial PRIMARY KEY, route text NOT NULL, tag text NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS phased_test_effects (id serial PRIMARY KEY, tag text NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS messaging_test_effects (id serial PRIMARY KEY, tag text NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS guard_test_notes (id serial PRIMARY KEY, tag text NOT NULL, note text NOT NULL, deleted_at timestamptz)`,
];

// The demo's lock (apps/payments-api/src/database/run-migrations.ts), on purpose: in one Jest
// run the demo's suites migrate the same database, and both create `idempotency_keys` and
// TypeORM's `migrations` table. Two locks would let the two race.
const MIGRATION_LOCK_ID = 7_341_000_001;

/**
 * Runs the DataSource's pending migrations (`libraryMigrations`) and creates the test tables in
 * one transaction that first takes a transaction-level advisory lock: Jest's two workers start
 * suites at once on one database, and each would otherwise create the same tables.
 */
export async function migrateTestDatabase(dataSource: DataSource): Promise<void> {
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  try {
    await runner.startTransaction();
    await runner.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_ID]);
    const executor = new MigrationExecutor(dataSource, runner);
    executor.transaction = 'all'; // joins the transaction above
    await executor.executePendingMigrations();
    for (const sql of TEST_TABLES) await runner.query(sql);
    await runner.commitTransaction();
  } catch (error) {
    if (runner.isTransactionActive) await runner.rollbackTransaction().catch(() => undefined);
    throw error;
  } finally {
    await runner.release();
  }
}
