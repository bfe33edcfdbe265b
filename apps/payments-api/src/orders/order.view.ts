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

/** `OrderView` for the OpenAPI document (an interface leaves no trace at run time). */
export const ORDER_VIEW_SCHEMA = {
  type: 'object',
  required: [
    'id',
    'customerId',
    'amountCents',
    'currency',
    'reference',
    'status',
    'createdAt',
    'paidCents',
  ],
  properties: {
    id: { type: 'string', format: 'uuid' },
    customerId: { type: 'string' },
    amountCents: { type: 'integer' },
    currency: { type: 'string', enum: ['usd', 'eur', 'gbp'] },
    reference: { type: 'string', nullable: true },
    status: { type: 'string', enum: ['pending', 'paid'] },
    createdAt: { type: 'string', format: 'date-time' },
    paidCents: { type: 'integer' },
  },
};
