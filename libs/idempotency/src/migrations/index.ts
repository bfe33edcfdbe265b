import { CreateIdempotencyKeys1764662400000 } from './1764662400000-create-idempotency-keys';
import { AddPhasedLeases1764748800000 } from './1764748800000-add-phased-leases';
import { CreateInbox1764835200000 } from './1764835200000-create-inbox';
import { CreateOutbox1764835200100 } from './1764835200100-create-outbox';

export const idempotencyMigrations = [
  CreateIdempotencyKeys1764662400000,
  AddPhasedLeases1764748800000,
  CreateInbox1764835200000,
  CreateOutbox1764835200100,
];
