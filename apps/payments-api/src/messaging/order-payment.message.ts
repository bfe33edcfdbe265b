import { UnprocessableMessageError } from 'nestjs-pg-idempotency/messaging';

/** A message of the `order-payments` queue: `{ "orderId": "<uuid>", "amountCents": 1500 }`. */
export interface OrderPaymentMessage {
  orderId: string;
  amountCents: number;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Anything else can never be applied: it is dead-lettered at once, not retried. */
export function parseOrderPayment(data: unknown): OrderPaymentMessage {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    throw new UnprocessableMessageError('the message is not a JSON object');
  }
  const { orderId, amountCents } = data as Record<string, unknown>;
  if (typeof orderId !== 'string' || !UUID.test(orderId)) {
    throw new UnprocessableMessageError('orderId must be a UUID');
  }
  if (
    typeof amountCents !== 'number' ||
    !Number.isInteger(amountCents) ||
    amountCents < 1 ||
    amountCents > 100_000_000
  ) {
    throw new UnprocessableMessageError('amountCents must be an integer from 1 to 100000000');
  }
  return { orderId, amountCents };
}
