import { hash } from 'node:crypto';

/**
 * The idempotency key for one downstream call: a SHA-256 (hex) of the parent key and the
 * step name. A retried parent derives the same child keys, so the downstream service
 * deduplicates too; two different calls (steps) get different keys; and the parent key itself
 * never leaves this service, so a downstream service cannot confuse our operation with another
 * of its callers' that happens to use the same key.
 */
export function childKey(parentKey: string, step: string): string {
  if (!step) throw new TypeError('childKey needs a step name');
  return hash('sha256', `${parentKey}\u0000${step}`, 'hex');
}
