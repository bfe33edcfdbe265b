import { CreateIdempotencyKeys1764662400000 } from './1764662400000-create-idempotency-keys';
import { AddPhasedLeases1764748800000 } from './1764748800000-add-phased-leases';

export const idempotencyMigrations = [CreateIdempotencyKeys1764662400000, AddPhasedLeases1764748800000];
