import { type ConfigurableModuleAsyncOptions, ConfigurableModuleBuilder } from '@nestjs/common';
import type { IdempotencyModuleOptions } from './idempotency.options';

/** What `IdempotencyModule.forRoot()` accepts: the options, plus `isGlobal`. */
export type IdempotencyModuleRootOptions = IdempotencyModuleOptions & {
  /** Register the module globally. Default `true`. */
  isGlobal?: boolean;
};

/**
 * What `IdempotencyModule.forRootAsync()` accepts: `imports`, `inject` and one of `useFactory`,
 * `useClass` (a class with `create()`) or `useExisting` producing the options, plus `isGlobal`.
 */
export type IdempotencyModuleAsyncOptions = ConfigurableModuleAsyncOptions<
  IdempotencyModuleOptions,
  'create'
> & {
  /** Register the module globally. Default `true`. */
  isGlobal?: boolean;
};

export const {
  ConfigurableModuleClass: ConfigurableIdempotencyModule,
  MODULE_OPTIONS_TOKEN: IDEMPOTENCY_MODULE_OPTIONS,
} = new ConfigurableModuleBuilder<IdempotencyModuleOptions>()
  .setClassMethodName('forRoot')
  // Global by default: `@Idempotent()` resolves its interceptor in whichever module the
  // controller lives, so the interceptor's dependencies must be visible everywhere.
  .setExtras({ isGlobal: true }, (definition, extras) => ({
    ...definition,
    global: extras.isGlobal,
  }))
  .build();
