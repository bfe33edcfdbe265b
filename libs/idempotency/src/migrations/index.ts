import { CreateIdempotencyKeys1764662400000 } from './1764662400000-create-idempotency-keys';
import { AddPhasedLeases1764748800000 } from './1764748800000-add-phased-leases';
import { AddSealedRecords1764921600400 } from './1764921600400-add-sealed-records';

/** `idempotency_keys`, its phased leases and sealed records; the messaging tables come with `messagingMigrations`. */
export const idempotencyMigrations = [
  CreateIdempotencyKeys1764662400000,
  AddPhasedLeases1764748800000,
  AddSealedRecords1764921600400,
];
