import { type DynamicModule, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { InboxHandlerCheck } from './inbox/inbox-handler-check';
import { InboxInterceptor } from './inbox/inbox.interceptor';
import { Inbox, InboxService } from './inbox/inbox.service';
import { InboxStore } from './inbox/inbox.store';
import { OutboxRelay, OutboxRelayService } from './outbox/outbox-relay';
import { Outbox, OutboxService } from './outbox/outbox.service';
import { OutboxStore } from './outbox/outbox.store';
import { MessagingCleanup, MessagingCleanupService } from './messaging-cleanup';
import { MESSAGING_OPTIONS } from './messaging.constants';
import { resolveMessagingOptions } from './messaging.defaults';
import {
  ConfigurableMessagingModule,
  type IdempotencyMessagingModuleAsyncOptions,
  type IdempotencyMessagingModuleRootOptions,
  MESSAGING_MODULE_OPTIONS,
} from './messaging.module-definition';
import { MessagingTransactionHost } from './messaging-transaction-host';
import { TransportLifecycle } from './transport-lifecycle';

/**
 * `IdempotencyMessagingModule.forRoot({ transport, inbox, outbox, cleanup })` or `.forRootAsync(...)`:
 * the inbox (`Inbox`, `@InboxHandler()`), the transactional outbox (`Outbox`, `OutboxRelay`) and
 * their retention. Like `IdempotencyModule`, it needs `ClsModule` with `ClsPluginTransactional`
 * and the TypeORM adapter. It loads no broker client itself: that is the transport's business.
 */
@Module({
  imports: [DiscoveryModule],
  providers: [
    {
      provide: MESSAGING_OPTIONS,
      inject: [MESSAGING_MODULE_OPTIONS],
      useFactory: resolveMessagingOptions,
    },
    MessagingTransactionHost,
    InboxStore,
    { provide: Inbox, useClass: InboxService },
    InboxInterceptor,
    OutboxStore,
    { provide: Outbox, useClass: OutboxService },
    { provide: OutboxRelay, useClass: OutboxRelayService },
    { provide: MessagingCleanup, useClass: MessagingCleanupService },
    TransportLifecycle,
    InboxHandlerCheck,
  ],
  // InboxStore for InboxInterceptor, which Nest builds in the module of each @InboxHandler().
  exports: [
    MESSAGING_OPTIONS,
    Inbox,
    InboxInterceptor,
    InboxStore,
    Outbox,
    OutboxRelay,
    MessagingCleanup,
  ],
})
export class IdempotencyMessagingModule {
  // Composed rather than inherited from the builder's class, as IdempotencyModule is: the
  // published declarations show these two entry points and their option types.
  static forRoot(options: IdempotencyMessagingModuleRootOptions = {}): DynamicModule {
    return { ...ConfigurableMessagingModule.forRoot(options), module: IdempotencyMessagingModule };
  }

  static forRootAsync(options: IdempotencyMessagingModuleAsyncOptions): DynamicModule {
    return {
      ...ConfigurableMessagingModule.forRootAsync(options),
      module: IdempotencyMessagingModule,
    };
  }
}
