import type { InboxSettlement, OutboxMessage } from 'nestjs-pg-idempotency/messaging';
import { FAULT_HEADER } from './demo-faults';

/**
 * Fault injection on the messaging side, only with `DEMO_FAULTS=1`, on the `x-demo-fault`
 * message header:
 * - `crash-before-ack`: the consumer dies after its commit and before its ack;
 * - `fail-transient`: the consumer writes, then fails; it rolls back and the message is retried;
 * - `crash-after-publish` (set on an event by `X-Demo-Fault` on `POST /v1/orders`): the relay
 *   dies after the broker confirmed the event and before the row is marked sent.
 */
export class MessageFaults {
  constructor(private readonly enabled: boolean) {}

  /** `inbox.onSettle`: runs between the commit and the ack. */
  readonly onSettle = (settlement: InboxSettlement): void => {
    if (settlement.status === 'applied' && this.fault(settlement.headers) === 'crash-before-ack') {
      process.kill(process.pid, 'SIGKILL');
    }
  };

  /** `outbox.onPublished`: runs between the broker's confirm and the mark-sent commit. */
  readonly onPublished = (messages: OutboxMessage[]): void => {
    if (messages.some((message) => this.fault(message.headers) === 'crash-after-publish')) {
      process.kill(process.pid, 'SIGKILL');
    }
  };

  /** Inside the consumer's transaction, after its write. */
  failIfAsked(headers: Readonly<Record<string, unknown>>): void {
    if (this.fault(headers) === 'fail-transient') {
      throw new Error('Injected transient failure (x-demo-fault: fail-transient).');
    }
  }

  private fault(headers: Readonly<Record<string, unknown>>): string | undefined {
    if (!this.enabled) return undefined;
    const value = headers[FAULT_HEADER];
    return Buffer.isBuffer(value)
      ? value.toString('utf8')
      : typeof value === 'string'
        ? value
        : undefined;
  }
}
