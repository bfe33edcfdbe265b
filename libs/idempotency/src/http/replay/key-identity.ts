import type { KeyId } from '../key-id';

/** One string per (tenant, scope, key): the name a key goes by in process memory. */
export function keyIdentity(id: KeyId): string {
  return `${id.tenantId}\u0000${id.scope}\u0000${id.key}`;
}
