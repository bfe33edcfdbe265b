import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';

export type Currency = 'usd' | 'eur' | 'gbp';
export type OrderStatus = 'pending' | 'paid';

@Entity({ name: 'orders' })
export class Order {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'tenant_id', type: 'text' })
  tenantId: string;

  @Column({ name: 'customer_id', type: 'text' })
  customerId: string;

  @Column({ name: 'amount_cents', type: 'integer' })
  amountCents: number;

  @Column({ type: 'text' })
  currency: Currency;

  /** Unique per tenant: the natural-key backstop behind the idempotency key. */
  @Column({ type: 'text', nullable: true })
  reference: string | null;

  @Column({ type: 'text' })
  status: OrderStatus;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  /** Sum of the order-payments messages applied to this order; bigint, read back as a number. */
  @Column({
    name: 'paid_cents',
    type: 'bigint',
    default: 0,
    transformer: { to: (v: number) => v, from: Number },
  })
  paidCents: number;
}
