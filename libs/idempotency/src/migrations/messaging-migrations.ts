import { CreateInbox1764835200000 } from './1764835200000-create-inbox';
import { CreateOutbox1764835200100 } from './1764835200100-create-outbox';
import { AddInboxDeadLettered1764921600700 } from './1764921600700-add-inbox-dead-lettered';

/**
 * The inbox's and the outbox's tables (`processed_messages`, `inbox_failures`,
 * `outbox_messages`), in order; spread them into your DataSource's `migrations` beside
 * `idempotencyMigrations`, which creates `idempotency_keys` only.
 */
export const messagingMigrations = [
  CreateInbox1764835200000,
  CreateOutbox1764835200100,
  AddInboxDeadLettered1764921600700,
];
