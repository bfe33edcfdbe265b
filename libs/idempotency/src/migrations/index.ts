import { CreateIdempotencyKeys1764662400000 } from './1764662400000-create-idempotency-keys';
import { AddPhasedLeases1764748800000 } from './1764748800000-add-phased-leases';
import { AddSealedRecords1764921600400 } from './1764921600400-add-sealed-records';
import { AddStartedSteps1764921600600 } from './1764921600600-add-started-steps';

/** `idempotency_keys`, its phased leases, sealed records and started steps; the messaging tables come with `messagingMigrations`. */
export const idempotencyMigrations = [
  CreateIdempotencyKeys1764662400000,
  AddPhasedLeases1764748800000,
  AddSealedRecords1764921600400,
  AddStartedSteps1764921600600,
];
