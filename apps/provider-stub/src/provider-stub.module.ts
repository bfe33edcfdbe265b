import { type DynamicModule, Module, ValidationPipe } from '@nestjs/common';
import { APP_FILTER, APP_INTERCEPTOR, APP_PIPE } from '@nestjs/core';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import { ClsPluginTransactional } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ClsModule } from 'nestjs-cls';
import { IdempotencyKeyEntity, IdempotencyModule } from 'nestjs-pg-idempotency';
import { providerStubMigrations } from '../../../migrations';
import { ProblemDetailsFilter } from '../../payments-api/src/problems/problem-details.filter';
import { Charge } from './charges/charge.entity';
import { ChargeListController } from './charges/charge-list.controller';
import { ChargesController } from './charges/charges.controller';
import { ChargesService } from './charges/charges.service';
import { UnkeyedChargesController } from './charges/unkeyed-charges.controller';
import { ProviderHealthController } from './provider-health.controller';
import { PROVIDER_STUB_CONNECTION, providerStubConnection } from './provider-stub.connection';
import { SlowAnswerInterceptor } from './slow-answer.interceptor';

export interface ProviderStubConfig {
  databaseUrl: string;
  demoFaults: boolean;
  /** False (`PROVIDER_IDEMPOTENCY=off`): `Idempotency-Key` is ignored, every charge charges. Default true. */
  idempotency?: boolean;
}

@Module({})
export class ProviderStubModule {
  static register(config: ProviderStubConfig): DynamicModule {
    return {
      module: ProviderStubModule,
      imports: [
        TypeOrmModule.forRoot({
          name: PROVIDER_STUB_CONNECTION,
          type: 'postgres',
          // Unqualified names (ours and the library's) resolve to the stub's own schema.
          ...providerStubConnection(config.databaseUrl),
          entities: [Charge, IdempotencyKeyEntity],
          migrations: providerStubMigrations,
        }),
        ClsModule.forRoot({
          global: true,
          plugins: [
            new ClsPluginTransactional({
              connectionName: PROVIDER_STUB_CONNECTION,
              imports: [TypeOrmModule],
              adapter: new TransactionalAdapterTypeOrm({
                dataSourceToken: getDataSourceToken(PROVIDER_STUB_CONNECTION),
              }),
            }),
          ],
        }),
        // The stub has no accounts: one anonymous key space, like a single merchant.
        IdempotencyModule.forRoot({ transactionConnectionName: PROVIDER_STUB_CONNECTION }),
      ],
      controllers: [
        config.idempotency === false ? UnkeyedChargesController : ChargesController,
        ChargeListController,
        ProviderHealthController,
      ],
      providers: [
        ChargesService,
        { provide: APP_FILTER, useClass: ProblemDetailsFilter },
        { provide: APP_INTERCEPTOR, useValue: new SlowAnswerInterceptor(config.demoFaults) },
        {
          provide: APP_PIPE,
          useValue: new ValidationPipe({
            transform: true,
            whitelist: true,
            forbidNonWhitelisted: true,
          }),
        },
      ],
    };
  }
}
