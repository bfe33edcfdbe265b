/** Identifies one key: the primary key of `idempotency_keys`. */
export interface KeyId {
  tenantId: string;
  scope: string;
  key: string;
}
