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

  /**
   * Sum of the order-payments messages applied to this order; bigint, read back as a number.
   * Its default (0) lives in the migration only: a column TypeORM knows a default of comes back
   * from `insert()`'s RETURNING untransformed (the string "0").
   */
  @Column({
    name: 'paid_cents',
    type: 'bigint',
    transformer: { to: (v: number) => v, from: Number },
  })
  paidCents: number;
}
