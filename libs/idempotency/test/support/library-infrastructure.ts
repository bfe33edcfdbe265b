import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import { ClsPluginTransactional } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ClsModule } from 'nestjs-cls';
import type { EntitySchema, MigrationInterface, MixedList } from 'typeorm';
import { databaseUrl } from './database-url';
import { libraryMigrations } from './migrations';

/** Transaction settings a user's app may give TypeORM or the transactional adapter. */
export interface InfrastructureOptions {
  /** TypeORM's DataSource-wide isolation level. */
  isolationLevel?: 'READ COMMITTED' | 'REPEATABLE READ' | 'SERIALIZABLE';
  /** The adapter's options for every transaction it opens. */
  defaultTxOptions?: { isolationLevel?: 'READ COMMITTED' | 'REPEATABLE READ' | 'SERIALIZABLE' };
  /** Connections in the pool (node-postgres's default, 10, when unset). */
  poolSize?: number;
  /** The sessions' `statement_timeout` (node-postgres's connection option), in ms. */
  statementTimeoutMs?: number;
  /** The DataSource's migrations. Default: the library's (`libraryMigrations`). */
  migrations?: MixedList<string | (new () => MigrationInterface)>;
  /** The DataSource's entities (a suite that writes through repositories). Default none. */
  entities?: MixedList<string | EntitySchema | (new () => unknown)>;
  /** TypeORM's query result cache, in its own table (`query-result-cache`). Default off. */
  cache?: boolean;
  /** The DataSource's subscribers (a suite that listens to TypeORM's events). Default none. */
  subscribers?: MixedList<string | (new () => unknown)>;
  /**
   * The package README's lean set-up: the transactional plugin through
   * `ClsModule.registerPlugins`, without `ClsModule.forRoot` (no CLS guard or interceptor).
   */
  pluginOnly?: boolean;
  /** `ClsModule.forRoot` with its interceptor mounted (`ClsInterceptor` as a global). */
  mountClsInterceptor?: boolean;
}

/**
 * What a user's app registers before the library, as in the README: TypeORM on the run's
 * PostgreSQL with the library's migrations, and nestjs-cls with the transactional plugin and its
 * TypeORM adapter (through `ClsModule.forRoot`, or alone with `pluginOnly`).
 */
export function libraryInfrastructure(options: InfrastructureOptions = {}) {
  const plugin = new ClsPluginTransactional({
    imports: [TypeOrmModule],
    adapter: new TransactionalAdapterTypeOrm({
      dataSourceToken: getDataSourceToken(),
      defaultTxOptions: options.defaultTxOptions,
    }),
  });
  return [
    TypeOrmModule.forRoot({
      type: 'postgres',
      url: databaseUrl(),
      migrations: options.migrations ?? libraryMigrations,
      entities: options.entities,
      subscribers: options.subscribers,
      cache: options.cache,
      isolationLevel: options.isolationLevel,
      extra: {
        ...(options.poolSize ? { max: options.poolSize } : {}),
        ...(options.statementTimeoutMs ? { statement_timeout: options.statementTimeoutMs } : {}),
      },
    }),
    options.pluginOnly
      ? ClsModule.registerPlugins([plugin])
      : ClsModule.forRoot({
          global: true,
          plugins: [plugin],
          interceptor: { mount: options.mountClsInterceptor === true },
        }),
  ];
}
