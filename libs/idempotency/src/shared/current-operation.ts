import { ClsServiceManager } from 'nestjs-cls';

/**
 * What the current transaction runs on behalf of: an idempotent request (its key) or an inbox
 * message (its producer-assigned id). The outbox derives its message ids from it, so a step that
 * runs again for the same operation publishes under the same id.
 */
export type CurrentOperation =
  | {
      kind: 'request';
      tenantId: string;
      scope: string;
      key: string;
      /**
       * This claim of the key (its row's creation): a key claimed anew after it expired is a new
       * operation, whose events must not share ids with the old one's in consumers' inboxes.
       */
      generation?: string;
    }
  | { kind: 'message'; consumer: string; messageId: string };

const CURRENT_OPERATION = Symbol('idempotency:current-operation');

/**
 * Binds the operation to the async context of the transaction that was just opened.
 * `TransactionHost.withTransaction` runs its callback in a child context, so the binding ends
 * with the transaction and never leaks into the caller's context.
 */
export function bindCurrentOperation(operation: CurrentOperation): void {
  const cls = ClsServiceManager.getClsService();
  if (cls.isActive()) cls.set(CURRENT_OPERATION, operation);
}

export function currentOperation(): CurrentOperation | undefined {
  const cls = ClsServiceManager.getClsService();
  return cls.isActive() ? cls.get<CurrentOperation | undefined>(CURRENT_OPERATION) : undefined;
}
