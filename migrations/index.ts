import { idempotencyMigrations } from 'nestjs-pg-idempotency';
import { messagingMigrations } from 'nestjs-pg-idempotency/messaging';
import { CreateOrders1764662400100 } from './1764662400100-create-orders';
import { CreatePayments1764748800200 } from './1764748800200-create-payments';
import { AddOrderPaidCents1764835200200 } from './1764835200200-add-order-paid-cents';
import { CreateCharges1764748800100 } from './provider-stub/1764748800100-create-charges';

/** The payments API's schema: the library's tables (keys, inbox, outbox) first, then the demo's own. */
export const paymentsApiMigrations = [
  ...idempotencyMigrations,
  ...messagingMigrations,
  CreateOrders1764662400100,
  CreatePayments1764748800200,
  AddOrderPaidCents1764835200200,
];

/** The provider stub's schema: its own `idempotency_keys` (it uses the library over HTTP only). */
export const providerStubMigrations = [...idempotencyMigrations, CreateCharges1764748800100];
