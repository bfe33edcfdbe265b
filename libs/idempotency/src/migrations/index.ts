import { CreateIdempotencyKeys1764662400000 } from './1764662400000-create-idempotency-keys';

export const idempotencyMigrations = [CreateIdempotencyKeys1764662400000];
