import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { MessagingModuleOptions } from './messaging.options';

export const {
  ConfigurableModuleClass: ConfigurableMessagingModule,
  MODULE_OPTIONS_TOKEN: MESSAGING_MODULE_OPTIONS,
  OPTIONS_TYPE: MESSAGING_OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE: MESSAGING_ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<MessagingModuleOptions>()
  .setClassMethodName('forRoot')
  // Global by default: `@InboxHandler()` resolves its interceptor in the handler's own module.
  .setExtras({ isGlobal: true }, (definition, extras) => ({ ...definition, global: extras.isGlobal }))
  .build();
