import { HttpException, Injectable } from '@nestjs/common';
import { InjectTransactionHost, TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { randomUUID } from 'node:crypto';
import { PROVIDER_STUB_CONNECTION } from '../provider-stub.connection';
import { Charge } from './charge.entity';
import type { CreateChargeDto } from './create-charge.dto';

/** The stub's view of a charge; field order here is the order on the wire. */
export interface ChargeView {
  id: string;
  amountCents: number;
  currency: string;
  reference: string;
  status: 'succeeded';
}

/** A charge as `GET /charges` lists it: with the key it came with and when. */
export interface ListedCharge extends ChargeView {
  idempotencyKey: string;
  createdAt: string;
}

function toView(charge: Charge): ChargeView {
  return {
    id: charge.id,
    amountCents: charge.amountCents,
    currency: charge.currency,
    reference: charge.reference,
    status: charge.status,
  };
}

/**
 * The card processor's book of charges. It declines any amount ending in 13, deterministically,
 * so a decline is stored and replayed like a charge.
 */
@Injectable()
export class ChargesService {
  constructor(
    @InjectTransactionHost(PROVIDER_STUB_CONNECTION)
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
  ) {}

  private get charges() {
    return this.txHost.tx.getRepository(Charge);
  }

  async create(dto: CreateChargeDto, idempotencyKey: string): Promise<ChargeView> {
    if (dto.amountCents % 100 === 13) {
      throw new HttpException(
        {
          type: '/problems/card_declined',
          code: 'card_declined',
          title: 'Card declined',
          detail: 'The card was declined (the stub declines amounts ending in 13).',
        },
        402,
      );
    }
    const charge = await this.charges.save(
      this.charges.create({
        id: `ch_${randomUUID().replace(/-/g, '')}`,
        amountCents: dto.amountCents,
        currency: dto.currency,
        reference: dto.reference,
        status: 'succeeded',
        idempotencyKey,
      }),
    );
    return toView(charge);
  }

  /** Every charge recorded (or those with `reference`), oldest first. */
  async list(reference?: string): Promise<ListedCharge[]> {
    const charges = await this.charges.find({
      where: reference === undefined ? {} : { reference },
      order: { createdAt: 'ASC', id: 'ASC' },
    });
    return charges.map((charge) => ({
      ...toView(charge),
      idempotencyKey: charge.idempotencyKey,
      createdAt: charge.createdAt.toISOString(),
    }));
  }
}
