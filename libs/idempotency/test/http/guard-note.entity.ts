import { Column, DeleteDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';

/** A table the write guard watches (created by the library suites' migrations). */
@Entity({ name: 'guard_test_notes' })
export class GuardNote {
  @PrimaryGeneratedColumn()
  id: number;

  @Column({ type: 'text' })
  tag: string;

  @Column({ type: 'text' })
  note: string;

  @DeleteDateColumn({ name: 'deleted_at', type: 'timestamptz' })
  deletedAt: Date | null;
}
