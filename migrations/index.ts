import { idempotencyMigrations } from 'nestjs-pg-idempotency';
import { CreateOrders1764662400100 } from './1764662400100-create-orders';
import { AddOrderPaidCents1764748800200 } from './1764748800200-add-order-paid-cents';

/** The demo's schema: the library's tables first, then the demo's own. */
export const paymentsApiMigrations = [
  ...idempotencyMigrations,
  CreateOrders1764662400100,
  AddOrderPaidCents1764748800200,
];
