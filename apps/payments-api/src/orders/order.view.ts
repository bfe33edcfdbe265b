import type { Currency, Order, OrderStatus } from './order.entity';

/** The order as the API shows it; field order here is the order on the wire. */
export interface OrderView {
  id: string;
  customerId: string;
  amountCents: number;
  currency: Currency;
  reference: string | null;
  status: OrderStatus;
  createdAt: string;
  paidCents: number;
}

export function toOrderView(order: Order): OrderView {
  return {
    id: order.id,
    customerId: order.customerId,
    amountCents: order.amountCents,
    currency: order.currency,
    reference: order.reference,
    status: order.status,
    createdAt: order.createdAt.toISOString(),
    paidCents: order.paidCents,
  };
}
