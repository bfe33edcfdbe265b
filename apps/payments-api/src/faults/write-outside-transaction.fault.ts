import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Order } from '../orders/order.entity';

export const WRITE_OUTSIDE_TRANSACTION = 'write-outside-transaction';

/**
 * `write-outside-transaction`: the classic bug, on purpose. A copy of the order is saved through
 * the default DataSource's manager, a connection of its own outside the request's transaction:
 * unguarded, it would commit even when the key is released, and every retry would add one. The
 * library's write guard refuses it before it reaches the database (docs/write-guard.md).
 */
@Injectable()
export class WriteOutsideTransactionFault {
  constructor(private readonly dataSource: DataSource) {}

  async saveCopy(order: Order): Promise<void> {
    await this.dataSource.manager.save(Order, {
      tenantId: order.tenantId,
      customerId: order.customerId,
      amountCents: order.amountCents,
      currency: order.currency,
      reference: null, // the reference is unique per tenant: the copy must not collide with it
      status: order.status,
      paidCents: 0,
    });
  }
}
