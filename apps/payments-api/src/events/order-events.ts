import { Injectable, Optional } from '@nestjs/common';
import { Outbox, type PublishedEvent } from 'nestjs-pg-idempotency/messaging';
import { PAYMENTS_EXCHANGE } from '../messaging/messaging.config';
import type { Order } from '../orders/order.entity';

export const ORDER_CREATED = 'order.created';

/**
 * The demo's own event, so the outbox runs end to end before payments exist: `order.created`
 * on the `payments` exchange, written in the order's transaction. No-op when messaging is off.
 */
@Injectable()
export class OrderEvents {
  constructor(@Optional() private readonly outbox?: Outbox) {}

  async created(
    order: Order,
    headers: Record<string, string> = {},
  ): Promise<PublishedEvent | undefined> {
    return this.outbox?.publish({
      exchange: PAYMENTS_EXCHANGE,
      routingKey: ORDER_CREATED,
      step: ORDER_CREATED,
      headers,
      payload: {
        orderId: order.id,
        tenantId: order.tenantId,
        customerId: order.customerId,
        amountCents: order.amountCents,
        currency: order.currency,
        reference: order.reference,
        createdAt: order.createdAt.toISOString(),
      },
    });
  }
}
