import { CreateIdempotencyKeys1764662400000 } from './1764662400000-create-idempotency-keys';
import { CreateInbox1764748800000 } from './1764748800000-create-inbox';
import { CreateOutbox1764748800100 } from './1764748800100-create-outbox';

export const idempotencyMigrations = [
  CreateIdempotencyKeys1764662400000,
  CreateInbox1764748800000,
  CreateOutbox1764748800100,
];
