/** Metadata key under which `@Idempotent()` keeps a route's options. */
export const IDEMPOTENT_ROUTE = Symbol('idempotency:route');

/** Injection token of the options with every default filled in. */
export const IDEMPOTENCY_OPTIONS = Symbol('idempotency:options');
