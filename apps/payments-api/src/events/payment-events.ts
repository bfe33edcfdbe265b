import { Injectable, Optional } from '@nestjs/common';
import { Outbox, type PublishedEvent } from 'nestjs-pg-idempotency/messaging';
import { PAYMENTS_EXCHANGE } from '../messaging/messaging.config';

export const PAYMENT_CAPTURED = 'payment.captured';

export interface PaymentCaptured {
  paymentId: string;
  orderId: string;
  amountCents: number;
  currency: string;
}

/**
 * `payment.captured` on the `payments` exchange. Call it inside the transaction that records
 * the capture (the finishing phase of the payment handler):
 *
 *   await this.paymentEvents.captured({ paymentId, orderId, amountCents, currency });
 *
 * The message id is derived from the request's idempotency key and the step name, so a phase
 * that runs again writes no second event. No-op when messaging is off.
 */
@Injectable()
export class PaymentEvents {
  constructor(@Optional() private readonly outbox?: Outbox) {}

  async captured(payment: PaymentCaptured): Promise<PublishedEvent | undefined> {
    return this.outbox?.publish({
      exchange: PAYMENTS_EXCHANGE,
      routingKey: PAYMENT_CAPTURED,
      step: PAYMENT_CAPTURED,
      payload: payment,
    });
  }
}
