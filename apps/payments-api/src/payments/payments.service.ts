import { HttpException, Injectable, NotFoundException } from '@nestjs/common';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import type { IdempotentPhases } from 'nestjs-pg-idempotency';
import { crashNow, type PaymentFaults } from '../faults/demo-faults';
import { PaymentEvents } from '../events/payment-events';
import { Order } from '../orders/order.entity';
import type { CreatePaymentDto } from './create-payment.dto';
import { Payment } from './payment.entity';
import { toPaymentView, type PaymentView } from './payment.view';
import { type ChargeOutcome, ProviderClient } from './provider.client';

@Injectable()
export class PaymentsService {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly provider: ProviderClient,
    private readonly paymentEvents: PaymentEvents,
  ) {}

  private get payments() {
    return this.txHost.tx.getRepository(Payment);
  }

  private get orders() {
    return this.txHost.tx.getRepository(Order);
  }

  /**
   * A payment as a state machine. Each recovery point commits on its own; a retry after a crash
   * runs this again from the top, and every point already committed returns what it recorded.
   */
  async capture(
    tenantId: string,
    dto: CreatePaymentDto,
    phases: IdempotentPhases,
    faults: PaymentFaults,
  ): Promise<PaymentView> {
    const { paymentId, currency } = await phases.transaction('created', () =>
      this.createPending(tenantId, dto),
    );
    if (faults.crashBeforeCharge) crashNow();

    // Outside any transaction: a database transaction must not wait on another system.
    const charge = await phases.external(
      'charge_sent',
      async (): Promise<ChargeOutcome> => {
        const outcome = await this.provider.charge(
          phases,
          { amountCents: dto.amountCents, currency, reference: paymentId },
          { loseAnswer: faults.providerTimeout },
        );
        if (faults.crashAfterCharge) crashNow();
        return outcome;
      },
      // An attempt that died between the charge and its record left the charge uncertain. The
      // child key covers a provider that deduplicates; one that ignores it would charge again,
      // so first look the charge up by our payment id.
      { reconcile: () => this.provider.findCharge(paymentId) },
    );

    if (charge.status === 'declined') {
      await phases.transaction('charge_declined', () => this.setStatus(paymentId, 'declined'));
      throw new HttpException(
        { ...charge.problem, type: '/problems/payment_declined', code: 'payment_declined' },
        402,
      );
    }
    return phases.transaction('charge_confirmed', () =>
      this.confirm(tenantId, paymentId, dto.orderId, charge.chargeId, currency),
    );
  }

  async get(tenantId: string, id: string): Promise<PaymentView> {
    const payment = await this.payments.findOneBy({ tenantId, id });
    if (!payment) {
      throw new NotFoundException({
        type: '/problems/payment_not_found',
        code: 'payment_not_found',
        title: 'Payment not found',
        detail: `No payment ${id} for this tenant.`,
      });
    }
    return toPaymentView(payment);
  }

  private async createPending(tenantId: string, dto: CreatePaymentDto) {
    const order = await this.orders.findOneBy({ tenantId, id: dto.orderId });
    if (!order) {
      throw new NotFoundException({
        type: '/problems/order_not_found',
        code: 'order_not_found',
        title: 'Order not found',
        detail: `No order ${dto.orderId} for this tenant.`,
      });
    }
    const payment = await this.payments.save(
      this.payments.create({
        tenantId,
        orderId: order.id,
        amountCents: dto.amountCents,
        status: 'pending',
        providerChargeId: null,
      }),
    );
    return { paymentId: payment.id, currency: order.currency };
  }

  private async setStatus(paymentId: string, status: Payment['status']): Promise<void> {
    await this.payments.update({ id: paymentId }, { status });
  }

  /** One transaction: the charge on the payment, the order paid, and the event in the outbox. */
  private async confirm(
    tenantId: string,
    paymentId: string,
    orderId: string,
    chargeId: string,
    currency: string,
  ): Promise<PaymentView> {
    await this.payments.update(
      { id: paymentId },
      { status: 'captured', providerChargeId: chargeId },
    );
    await this.orders.update({ tenantId, id: orderId }, { status: 'paid' });
    const payment = await this.payments.findOneByOrFail({ id: paymentId });
    await this.paymentEvents.captured({
      paymentId,
      orderId,
      amountCents: payment.amountCents,
      currency,
    });
    return toPaymentView(payment);
  }
}
