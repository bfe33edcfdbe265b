import { type ConfigurableModuleAsyncOptions, ConfigurableModuleBuilder } from '@nestjs/common';
import type { MessagingModuleOptions } from './messaging.options';

/** What `IdempotencyMessagingModule.forRoot()` accepts: the options, plus `isGlobal`. */
export type IdempotencyMessagingModuleRootOptions = MessagingModuleOptions & {
  /** Register the module globally. Default `true`. */
  isGlobal?: boolean;
};

/**
 * What `IdempotencyMessagingModule.forRootAsync()` accepts: `imports`, `inject` and one of
 * `useFactory`, `useClass` (a class with `create()`) or `useExisting` producing the options,
 * plus `isGlobal`.
 */
export type IdempotencyMessagingModuleAsyncOptions = ConfigurableModuleAsyncOptions<
  MessagingModuleOptions,
  'create'
> & {
  /** Register the module globally. Default `true`. */
  isGlobal?: boolean;
};

export const {
  ConfigurableModuleClass: ConfigurableMessagingModule,
  MODULE_OPTIONS_TOKEN: MESSAGING_MODULE_OPTIONS,
} = new ConfigurableModuleBuilder<MessagingModuleOptions>()
  .setClassMethodName('forRoot')
  // Global by default: `@InboxHandler()` resolves its interceptor in the handler's own module.
  .setExtras({ isGlobal: true }, (definition, extras) => ({
    ...definition,
    global: extras.isGlobal,
  }))
  .build();
