// nestjs-pg-idempotency/messaging: the inbox (each message applied once) and the transactional
// outbox (no event lost), with their tables' migrations. Nothing here loads a broker's client:
// a transport plugs in through `MessagingTransport` (RabbitMQ: nestjs-pg-idempotency/rabbitmq).
export { IdempotencyMessagingModule } from './messaging.module';
export type {
  IdempotencyMessagingModuleAsyncOptions,
  IdempotencyMessagingModuleRootOptions,
} from './messaging.module-definition';
export type {
  CleanupOptions,
  InboxOptions,
  InboxSettlement,
  MessagingModuleOptions,
  OutboxOptions,
} from './messaging.options';
export type {
  DeadLetterReason,
  InboxDelivery,
  MessagingTransport,
  OutboxMessage,
} from './messaging-transport';
export { MessagingCleanup, type CleanupResult } from './messaging-cleanup';
export { Inbox, type InboxOutcome } from './inbox/inbox.service';
export { InboxHandler } from './inbox/inbox-handler.decorator';
export type { InboxHandlerOptions } from './inbox/inbox-handler.options';
export {
  MessageInFlightError,
  MissingMessageIdError,
  UnprocessableMessageError,
} from './inbox/inbox.errors';
// The base of those errors (also the root's), so `instanceof IdempotencyError` needs no second import.
export { IdempotencyError } from '../shared/idempotency-error';
export { Outbox, type OutboxEvent, type PublishedEvent } from './outbox/outbox.service';
export { OutboxRelay, type RelayBatchResult } from './outbox/outbox-relay';
export { derivedMessageId } from './outbox/derived-message-id';
export type { CurrentOperation } from '../shared/current-operation';
export { CreateInbox1764835200000 } from '../migrations/1764835200000-create-inbox';
export { CreateOutbox1764835200100 } from '../migrations/1764835200100-create-outbox';
export { AddInboxDeadLettered1764921600700 } from '../migrations/1764921600700-add-inbox-dead-lettered';
export { messagingMigrations } from '../migrations/messaging-migrations';
