import { IdempotencyKeyEntity } from 'nestjs-pg-idempotency';
import { DataSource } from 'typeorm';
import { databaseUrl } from '../support/database-url';
import { migrateTestDatabase } from '../support/migrations';

/**
 * An app that registers the exported entity beside its own runs TypeORM's schema builder on it:
 * `synchronize: true` at start, `migration:generate` in development. After the library's
 * migrations, the builder must find nothing to change: a dropped default or constraint would
 * break every claim (the claim's INSERT relies on `created_at`'s default).
 */
describe('IdempotencyKeyEntity against the shipped migrations', () => {
  let dataSource: DataSource;
  beforeAll(async () => {
    dataSource = new DataSource({
      type: 'postgres',
      url: databaseUrl(),
      entities: [IdempotencyKeyEntity],
    });
    await dataSource.initialize();
    await migrateTestDatabase(dataSource);
  });
  afterAll(() => dataSource?.destroy());

  it('gives the schema builder nothing to change (synchronize, migration:generate)', async () => {
    const { upQueries } = await dataSource.driver.createSchemaBuilder().log();
    expect(upQueries.map((query) => query.query)).toEqual([]);
  });
});
