import { type DynamicModule, Module } from '@nestjs/common';
import { IDEMPOTENCY_OPTIONS } from './idempotency.constants';
import { resolveOptions } from './idempotency.defaults';
import { IdempotencyInterceptor } from './idempotency.interceptor';
import { IdempotencyKeyStore } from './idempotency-key.store';
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
  providers: [
    { provide: IDEMPOTENCY_OPTIONS, inject: [IDEMPOTENCY_MODULE_OPTIONS], useFactory: resolveOptions },
    IdempotencyKeyStore,
    IdempotencyInterceptor,
  ],
  exports: [IDEMPOTENCY_OPTIONS, IdempotencyKeyStore, IdempotencyInterceptor],
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
