import { assertTimerBound } from '../shared/timer-bound';
import type {
  CleanupOptions,
  InboxOptions,
  MessagingModuleOptions,
  OutboxOptions,
} from './messaging.options';
import type { MessagingTransport } from './messaging-transport';

const DAY_SECONDS = 86_400;

export interface ResolvedMessagingOptions {
  transport?: MessagingTransport;
  inbox: Required<Omit<InboxOptions, 'onSettle'>> & Pick<InboxOptions, 'onSettle'>;
  outbox: Required<Omit<OutboxOptions, 'onPublished'>> & Pick<OutboxOptions, 'onPublished'>;
  cleanup: Required<CleanupOptions>;
  transactionConnectionName?: string;
}

export function resolveMessagingOptions(
  options: MessagingModuleOptions = {},
): ResolvedMessagingOptions {
  const inbox = options.inbox ?? {};
  const outbox = options.outbox ?? {};
  const cleanup = options.cleanup ?? {};
  const resolved: ResolvedMessagingOptions = {
    transport: options.transport,
    transactionConnectionName: options.transactionConnectionName,
    inbox: {
      maxAttempts: inbox.maxAttempts ?? 5,
      retryDelayMs: inbox.retryDelayMs ?? 200,
      lockTimeoutMs: inbox.lockTimeoutMs ?? 5000,
      retentionSeconds: inbox.retentionSeconds ?? 7 * DAY_SECONDS,
      onSettle: inbox.onSettle,
    },
    outbox: {
      relay: outbox.relay ?? typeof options.transport?.publish === 'function',
      pollIntervalMs: outbox.pollIntervalMs ?? 500,
      batchSize: outbox.batchSize ?? 100,
      backoffBaseMs: outbox.backoffBaseMs ?? 1000,
      backoffMaxMs: outbox.backoffMaxMs ?? 300_000,
      retentionSeconds: outbox.retentionSeconds ?? 7 * DAY_SECONDS,
      onPublished: outbox.onPublished,
    },
    cleanup: {
      intervalSeconds: cleanup.intervalSeconds ?? 3600,
      batchSize: cleanup.batchSize ?? 1000,
      maxBatches: cleanup.maxBatches ?? 100,
    },
  };
  positive('inbox.maxAttempts', resolved.inbox.maxAttempts);
  nonNegative('inbox.retryDelayMs', resolved.inbox.retryDelayMs);
  positive('inbox.lockTimeoutMs', resolved.inbox.lockTimeoutMs);
  positive('inbox.retentionSeconds', resolved.inbox.retentionSeconds);
  positive('outbox.pollIntervalMs', resolved.outbox.pollIntervalMs);
  positive('outbox.batchSize', resolved.outbox.batchSize);
  positive('outbox.backoffBaseMs', resolved.outbox.backoffBaseMs);
  positive('outbox.backoffMaxMs', resolved.outbox.backoffMaxMs);
  positive('outbox.retentionSeconds', resolved.outbox.retentionSeconds);
  nonNegative('cleanup.intervalSeconds', resolved.cleanup.intervalSeconds);
  timerBound('cleanup.intervalSeconds', resolved.cleanup.intervalSeconds, 1000);
  timerBound('outbox.pollIntervalMs', resolved.outbox.pollIntervalMs, 1);
  timerBound('inbox.retryDelayMs', resolved.inbox.retryDelayMs, 1);
  timerBound('inbox.lockTimeoutMs', resolved.inbox.lockTimeoutMs, 1);
  positive('cleanup.batchSize', resolved.cleanup.batchSize);
  positive('cleanup.maxBatches', resolved.cleanup.maxBatches);
  if (resolved.outbox.relay && typeof options.transport?.publish !== 'function') {
    throw new Error('IdempotencyMessagingModule: outbox.relay needs a transport that can publish');
  }
  return resolved;
}

/** `assertTimerBound` for this module's options, `unitMs` milliseconds to the unit. */
function timerBound(name: string, value: number, unitMs: number): void {
  assertTimerBound('IdempotencyMessagingModule', name, value, unitMs);
}

function positive(name: string, value: number): void {
  if (!Number.isInteger(value) || value <= 0) {
    throw new Error(
      `IdempotencyMessagingModule: option ${name} must be a positive integer, got ${value}`,
    );
  }
}

function nonNegative(name: string, value: number): void {
  if (!Number.isInteger(value) || value < 0) {
    throw new Error(
      `IdempotencyMessagingModule: option ${name} must be a non-negative integer, got ${value}`,
    );
  }
}
