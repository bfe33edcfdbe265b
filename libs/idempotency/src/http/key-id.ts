/** Identifies one key: the primary key of `idempotency_keys`. */
export interface KeyId {
  tenantId: string;
  scope: string;
  key: string;
}

/**
 * The key's tenant from what the `tenantResolver` returned: its text, or `''` for none. A
 * number (a numeric user id) is taken as its decimal text. Anything else is the resolver's bug,
 * and a costly one: every object would read as `[object Object]`, one tenant for all, whose
 * keys and replays would then be shared. It fails the request instead.
 */
export function tenantIdOf(resolved: unknown): string {
  if (resolved === undefined || resolved === null) return '';
  if (typeof resolved === 'string') return resolved;
  if ((typeof resolved === 'number' && Number.isFinite(resolved)) || typeof resolved === 'bigint')
    return String(resolved);
  throw new TypeError(
    `tenantResolver returned ${typeof resolved === 'object' ? 'an object' : `a ${typeof resolved}`}: ` +
      'it must return the tenant as a string, or undefined for none',
  );
}
