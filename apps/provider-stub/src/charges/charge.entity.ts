import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

@Entity({ name: 'charges' })
export class Charge {
  @PrimaryColumn({ type: 'text' })
  id: string;

  @Column({ name: 'amount_cents', type: 'integer' })
  amountCents: number;

  @Column({ type: 'text' })
  currency: string;

  @Column({ type: 'text' })
  reference: string;

  @Column({ type: 'text' })
  status: 'succeeded';

  /** The key the charge came with: what a caller's retries must repeat. */
  @Column({ name: 'idempotency_key', type: 'text' })
  idempotencyKey: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
