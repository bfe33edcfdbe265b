import { createHash } from 'node:crypto';
import type { CurrentOperation } from '../../shared/current-operation';

/**
 * A message id that is the same every time the same step of the same operation runs: SHA-256
 * over the operation's identity and the step name, written as a UUID (version 8, "custom").
 * Different steps of one operation, or one step of two operations, never share an id.
 */
export function derivedMessageId(operation: CurrentOperation, step: string): string {
  const identity =
    operation.kind === 'request'
      ? [
          'request',
          operation.tenantId,
          operation.scope,
          operation.key,
          ...(operation.generation ? [operation.generation] : []),
          step,
        ]
      : ['message', operation.consumer, operation.messageId, step];
  const bytes = createHash('sha256')
    .update(JSON.stringify(identity), 'utf8')
    .digest()
    .subarray(0, 16);
  bytes[6] = (bytes[6] & 0x0f) | 0x80; // version 8
  bytes[8] = (bytes[8] & 0x3f) | 0x80; // RFC 9562 variant
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
