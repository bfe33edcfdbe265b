import { type DynamicModule, Module, ValidationPipe } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_INTERCEPTOR, APP_PIPE } from '@nestjs/core';
import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { GraphQLModule } from '@nestjs/graphql';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import { ClsPluginTransactional } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ClsModule } from 'nestjs-cls';
import { IdempotencyKeyEntity, IdempotencyModule } from 'nestjs-pg-idempotency';
import { paymentsApiMigrations } from '../../../migrations';
import { APP_CONFIG, type AppConfig } from './app.config';
import { ApiKeyGuard } from './auth/api-key.guard';
import { EventsModule } from './events/events.module';
import { BenchModule } from './bench/bench.module';
import { CrashAfterCommitInterceptor } from './faults/crash-after-commit.interceptor';
import { HANDLER_FAULT_HOOKS_ATTACHED } from './faults/with-demo-faults.decorator';
import { HealthController } from './health/health.controller';
import { DemoMessagingModule } from './messaging/demo-messaging.module';
import { messagingSettings } from './messaging/messaging.config';
import { Order } from './orders/order.entity';
import { MetricsModule } from './metrics/metrics.module';
import { OrdersModule } from './orders/orders.module';
import { Payment } from './payments/payment.entity';
import { PaymentsModule } from './payments/payments.module';
import { ProblemDetailsFilter } from './problems/problem-details.filter';

@Module({})
export class AppModule {
  static register(config: AppConfig): DynamicModule {
    if (config.demoFaults && !HANDLER_FAULT_HOOKS_ATTACHED) {
      throw new Error(
        "demoFaults needs DEMO_FAULTS=1 in the environment before the app is loaded: the routes' " +
          'fault hooks are attached when their controllers load',
      );
    }
    return {
      module: AppModule,
      global: true,
      imports: [
        TypeOrmModule.forRoot({
          type: 'postgres',
          url: config.databaseUrl,
          entities: [Order, Payment, IdempotencyKeyEntity],
          migrations: paymentsApiMigrations,
          // Room for the concurrency tests: duplicates hold a connection while they wait.
          extra: { max: 20 },
        }),
        // Binds a transaction to the async context, so services write through txHost.tx. The
        // plugin alone, not ClsModule.forRoot: forRoot adds a global guard and interceptor that
        // do nothing unless mounted, yet put every route through Nest's interceptor chain (about
        // 0.1 ms per request here). Nothing mounts a CLS context in this app: the library, the
        // inbox and withTransaction each open their own.
        ClsModule.registerPlugins([
          new ClsPluginTransactional({
            imports: [TypeOrmModule],
            adapter: new TransactionalAdapterTypeOrm({ dataSourceToken: getDataSourceToken() }),
          }),
        ]),
        IdempotencyModule.forRoot({
          leaseSeconds: config.leaseSeconds,
          cleanup: config.cleanup,
          preparedStatements: config.preparedStatements,
          maxResponseBytes: config.maxResponseBytes,
          encryption: config.encryptionKeys && { keys: config.encryptionKeys },
          writeGuard: config.writeGuard,
          ...(config.replayCache === false && { replayCache: false as const }),
        }),
        MetricsModule,
        EventsModule,
        // Without AMQP_URL the messaging part is not even loaded (nor is amqplib).
        ...(config.amqpUrl
          ? [
              DemoMessagingModule.register(
                messagingSettings(config.amqpUrl, config.messaging),
                config.demoFaults,
              ),
            ]
          : []),
        OrdersModule,
        PaymentsModule,
        ...(config.graphql
          ? [
              GraphQLModule.forRoot<ApolloDriverConfig>({
                driver: ApolloDriver,
                path: '/graphql',
                autoSchemaFile: true, // built in memory from the code-first types
                playground: false,
                // A stack trace differs on every answer: a replayed error must be the same bytes.
                includeStacktraceInErrorResponses: false,
              }),
            ]
          : []),
        ...(config.benchRoutes ? [BenchModule.register(config.benchRedisUrl)] : []),
      ],
      controllers: [HealthController],
      providers: [
        { provide: APP_CONFIG, useValue: config },
        { provide: APP_GUARD, useClass: ApiKeyGuard },
        { provide: APP_FILTER, useClass: ProblemDetailsFilter },
        // Only with DEMO_FAULTS=1: with faults off, no request pays for the hook.
        ...(config.demoFaults
          ? [{ provide: APP_INTERCEPTOR, useClass: CrashAfterCommitInterceptor }]
          : []),
        {
          provide: APP_PIPE,
          useValue: new ValidationPipe({
            transform: true,
            whitelist: true,
            forbidNonWhitelisted: true,
          }),
        },
      ],
      exports: [APP_CONFIG],
    };
  }
}
