import { Controller, Inject } from '@nestjs/common';
import { Ctx, EventPattern, Payload, type RmqContext } from '@nestjs/microservices';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { InboxHandler, UnprocessableMessageError } from 'nestjs-pg-idempotency/messaging';
import { APP_CONFIG, type AppConfig } from '../app.config';
import { Public } from '../auth/public.decorator';
import { MessageFaults } from '../faults/message-faults';
import { ORDER_PAYMENTS_CONSUMER, ORDER_PAYMENTS_PATTERN } from './messaging.config';
import { parseOrderPayment } from './order-payment.message';

/**
 * Consumes `order-payments`: each message adds its amount to the order's `paidCents`, once.
 * The inbox claims the message id and this update commit together; the ack follows the commit.
 */
@Controller()
@Public() // broker messages carry no API key; the guard is for HTTP callers
export class OrderPaymentsConsumer {
  private readonly faults: MessageFaults;

  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.faults = new MessageFaults(config.demoFaults);
  }

  @EventPattern(ORDER_PAYMENTS_PATTERN)
  @InboxHandler(ORDER_PAYMENTS_CONSUMER)
  async apply(@Payload() data: unknown, @Ctx() context: RmqContext): Promise<void> {
    const payment = parseOrderPayment(data);
    const updated: Array<{ paid_cents: string }> = await this.txHost.tx.query(
      `WITH paid AS (
         UPDATE orders SET paid_cents = paid_cents + $1 WHERE id = $2 RETURNING paid_cents
       )
       SELECT paid_cents FROM paid`,
      [payment.amountCents, payment.orderId],
    );
    if (updated.length === 0) throw new UnprocessableMessageError(`no order ${payment.orderId}`);
    const message = context.getMessage() as { properties: { headers?: Record<string, unknown> } };
    this.faults.failIfAsked(message.properties.headers ?? {});
  }
}
