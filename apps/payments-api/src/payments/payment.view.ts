import type { Payment, PaymentStatus } from './payment.entity';

/** The payment as the API shows it; field order here is the order on the wire. */
export interface PaymentView {
  id: string;
  orderId: string;
  amountCents: number;
  status: PaymentStatus;
  providerChargeId: string | null;
}

export function toPaymentView(payment: Payment): PaymentView {
  return {
    id: payment.id,
    orderId: payment.orderId,
    amountCents: payment.amountCents,
    status: payment.status,
    providerChargeId: payment.providerChargeId,
  };
}

/** `PaymentView` in OpenAPI, for the routes that answer one. */
export const PAYMENT_VIEW_SCHEMA = {
  type: 'object',
  required: ['id', 'orderId', 'amountCents', 'status', 'providerChargeId'],
  properties: {
    id: { type: 'string', format: 'uuid' },
    orderId: { type: 'string', format: 'uuid' },
    amountCents: { type: 'integer' },
    status: { type: 'string', enum: ['pending', 'captured', 'declined'] },
    providerChargeId: { type: 'string', nullable: true },
  },
};
