import { CreateIdempotencyKeys1764662400000 } from './1764662400000-create-idempotency-keys';
import { AddPhasedLeases1764748800000 } from './1764748800000-add-phased-leases';

/** `idempotency_keys` and its phased leases; the messaging tables come with `messagingMigrations`. */
export const idempotencyMigrations = [
  CreateIdempotencyKeys1764662400000,
  AddPhasedLeases1764748800000,
];
