import { type DynamicModule, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { IDEMPOTENCY_OPTIONS } from './idempotency.constants';
import { resolveOptions } from './idempotency.defaults';
import { AtomicRunner } from './atomic/atomic.runner';
import { CleanupScheduler } from './cleanup/cleanup.scheduler';
import { IdempotencyCleanup, IdempotencyCleanupService } from './cleanup/idempotency-cleanup';
import { IdempotencyEvents } from './events/idempotency-events';
import { IdempotencyInterceptor } from './idempotency.interceptor';
import { IdempotencyKeyStore } from './idempotency-key.store';
import { MessageHandlerCheck } from './message-handler-check';
import { OpenApiDocumenter } from './openapi/openapi-documenter';
import { LeaseStore } from './phased/lease.store';
import { PhasedRunner } from './phased/phased.runner';
import { CompletedResponseCache } from './replay/completed-response.cache';
import { InFlightKeys } from './replay/in-flight-keys';
import { RecordSealer } from './sealing/record-sealer';
import { TransactionHostRef } from './transaction-host.ref';
import { WriteGuardSubscriber } from './write-guard/write-guard.subscriber';
import {
  ConfigurableIdempotencyModule,
  IDEMPOTENCY_MODULE_OPTIONS,
  type IdempotencyModuleAsyncOptions,
  type IdempotencyModuleRootOptions,
} from './idempotency.module-definition';

/**
 * `IdempotencyModule.forRoot(options)` or `.forRootAsync({ imports, inject, useFactory })`.
 * Needs `ClsModule` with `ClsPluginTransactional` and the TypeORM adapter registered by the app
 * (see the README): the module opens its transactions through that `TransactionHost`.
 */
@Module({
  imports: [DiscoveryModule],
  providers: [
    {
      provide: IDEMPOTENCY_OPTIONS,
      inject: [IDEMPOTENCY_MODULE_OPTIONS],
      useFactory: resolveOptions,
    },
    TransactionHostRef,
    IdempotencyEvents,
    CompletedResponseCache,
    InFlightKeys,
    { provide: IdempotencyCleanup, useClass: IdempotencyCleanupService },
    CleanupScheduler,
    OpenApiDocumenter,
    MessageHandlerCheck,
    RecordSealer,
    IdempotencyKeyStore,
    LeaseStore,
    AtomicRunner,
    PhasedRunner,
    IdempotencyInterceptor,
    WriteGuardSubscriber,
  ],
  // @Idempotent() instantiates the interceptor in the controller's module: its dependencies
  // must be visible there.
  exports: [
    IDEMPOTENCY_OPTIONS,
    TransactionHostRef,
    IdempotencyEvents,
    CompletedResponseCache,
    InFlightKeys,
    IdempotencyCleanup,
    RecordSealer,
    IdempotencyKeyStore,
    LeaseStore,
    AtomicRunner,
    PhasedRunner,
    IdempotencyInterceptor,
  ],
})
export class IdempotencyModule {
  // The builder makes the options providers; this class only takes them over. Composed rather
  // than inherited, so the published declarations show these two entry points and no
  // generated base class.
  static forRoot(options: IdempotencyModuleRootOptions = {}): DynamicModule {
    return { ...ConfigurableIdempotencyModule.forRoot(options), module: IdempotencyModule };
  }

  static forRootAsync(options: IdempotencyModuleAsyncOptions): DynamicModule {
    return { ...ConfigurableIdempotencyModule.forRootAsync(options), module: IdempotencyModule };
  }
}
