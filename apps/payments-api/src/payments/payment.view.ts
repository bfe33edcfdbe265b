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
