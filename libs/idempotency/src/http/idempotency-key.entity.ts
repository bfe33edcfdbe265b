import { Check, Column, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * The key table, for apps that want to query it through TypeORM (admin screens, audits).
 * The library itself writes it with plain SQL; the schema comes from the shipped migrations,
 * and this entity describes it exactly (defaults and constraints by their names): TypeORM's
 * schema builder (`synchronize`, `migration:generate`) then finds nothing to change in it.
 */
@Entity({ name: 'idempotency_keys' })
@Index('idempotency_keys_expires_at_idx', ['expiresAt'])
@Check('idempotency_keys_status_check', `status IN ('in_progress', 'completed')`)
@Check(
  'idempotency_keys_completed_check',
  `status <> 'completed' OR (response_code IS NOT NULL AND response_body IS NOT NULL)`,
)
export class IdempotencyKeyEntity {
  @PrimaryColumn({ name: 'tenant_id', type: 'text' })
  tenantId: string;

  /** The route's scope, e.g. `POST /v1/orders`. */
  @PrimaryColumn({ name: 'endpoint', type: 'text' })
  endpoint: string;

  @PrimaryColumn({ name: 'idem_key', type: 'text' })
  idemKey: string;

  /** SHA-256 (hex) of the canonical request; the request itself is never stored. */
  @Column({ name: 'request_hash', type: 'text' })
  requestHash: string;

  @Column({ name: 'status', type: 'text' })
  status: 'in_progress' | 'completed';

  @Column({ name: 'response_code', type: 'smallint', nullable: true })
  responseCode: number | null;

  @Column({ name: 'response_headers', type: 'jsonb', nullable: true })
  responseHeaders: Record<string, string> | null;

  /**
   * The exact bytes sent; `bytea`, because `jsonb` would reorder keys and break replays. On a
   * sealed row (`sealedWith` set): the envelope holding the headers and the body.
   */
  @Column({ name: 'response_body', type: 'bytea', nullable: true })
  responseBody: Buffer | null;

  /**
   * Option `encryption`: the id of the key that sealed the response (null on a plain row). Sealed
   * step results in `stepState` each name their key themselves.
   */
  @Column({ name: 'sealed_with', type: 'text', nullable: true })
  sealedWith: string | null;

  /** Phased mode: the last committed recovery point (`finished` once completed). */
  @Column({ name: 'recovery_point', type: 'text', nullable: true })
  recoveryPoint: string | null;

  /** Phased mode: what each committed recovery point recorded, by name. */
  @Column({ name: 'step_state', type: 'jsonb', nullable: true })
  stepState: Record<string, unknown> | null;

  /**
   * Phased mode: the external steps started, recorded before each call. One here without a
   * result in `stepState` is uncertain: the call may have happened.
   */
  @Column({ name: 'started_steps', type: 'text', array: true, nullable: true })
  startedSteps: string[] | null;

  /** Phased mode: until when the current attempt holds the key. */
  @Column({ name: 'locked_until', type: 'timestamptz', nullable: true })
  lockedUntil: Date | null;

  /** Phased mode: the attempt holding the lease; every phase commit is fenced by it. */
  @Column({ name: 'lease_owner', type: 'uuid', nullable: true })
  leaseOwner: string | null;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', default: () => 'now()' })
  updatedAt: Date;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt: Date;
}
