import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import { ClsPluginTransactional } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ClsModule } from 'nestjs-cls';
import { paymentsApiMigrations } from '../../migrations';
import { databaseUrl } from './test-app';

/**
 * What a user's app registers before the library, as in the README: TypeORM on the run's
 * PostgreSQL, and nestjs-cls with the transactional plugin and its TypeORM adapter.
 */
export function libraryInfrastructure() {
  return [
    TypeOrmModule.forRoot({ type: 'postgres', url: databaseUrl(), migrations: paymentsApiMigrations }),
    ClsModule.forRoot({
      global: true,
      plugins: [
        new ClsPluginTransactional({
          imports: [TypeOrmModule],
          adapter: new TransactionalAdapterTypeOrm({ dataSourceToken: getDataSourceToken() }),
        }),
      ],
    }),
  ];
}
