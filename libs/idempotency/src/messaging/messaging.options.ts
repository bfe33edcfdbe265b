import type { MessagingTransport, OutboxMessage } from './messaging-transport';

/** How one delivery ended; reported to `inbox.onSettle` before the broker is told. */
export interface InboxSettlement {
  consumer: string;
  /** Undefined only for `dead-lettered` messages that carried no id. */
  messageId: string | undefined;
  status: 'applied' | 'duplicate' | 'retried' | 'dead-lettered';
  headers: Readonly<Record<string, unknown>>;
  /** Failed deliveries so far, for `retried` and `dead-lettered`. */
  attempts?: number;
}

export interface InboxOptions {
  /** Deliveries that may fail before the message is dead-lettered. Default 5. */
  maxAttempts?: number;
  /** Pause before a failed delivery is handed back, times the attempt number. Default 200 ms. */
  retryDelayMs?: number;
  /** How long a duplicate waits behind its twin's uncommitted claim. Default 5000 ms. */
  lockTimeoutMs?: number;
  /**
   * How long processed ids are kept. Must exceed the longest time a message can be delivered
   * again (broker redelivery, producer retries, replays from a dead-letter queue). Default 7 days.
   */
  retentionSeconds?: number;
  /** Called after the transaction ended and before the ack, nack or dead-letter: metrics, logs. */
  onSettle?: (settlement: InboxSettlement) => void | Promise<void>;
}

export interface OutboxOptions {
  /** Run the relay in this process. Default: true when the transport can publish. */
  relay?: boolean;
  /** Pause between polls when nothing is due. Default 500 ms. */
  pollIntervalMs?: number;
  /** Rows claimed per relay transaction. Default 100. */
  batchSize?: number;
  /** First retry delay after a failed publish; doubles per attempt. Default 1000 ms. */
  backoffBaseMs?: number;
  /** Longest retry delay. Default 300000 ms (5 min). */
  backoffMaxMs?: number;
  /** How long sent rows are kept. Default 7 days. */
  retentionSeconds?: number;
  /**
   * Called after the broker confirmed a batch and before its rows are marked sent (metrics).
   * If it throws, the batch rolls back and is published again: consumers see a duplicate.
   */
  onPublished?: (messages: OutboxMessage[]) => void | Promise<void>;
}

export interface CleanupOptions {
  /** Seconds between cleanup runs in this process; 0 turns the schedule off. Default 3600. */
  intervalSeconds?: number;
  /** Rows deleted per statement. Default 1000. */
  batchSize?: number;
  /** Statements per table and run, so one run stays bounded. Default 100. */
  maxBatches?: number;
}

export interface MessagingModuleOptions {
  /** The broker. Without one, `Inbox` and `Outbox.publish` work and the relay does not run. */
  transport?: MessagingTransport;
  inbox?: InboxOptions;
  outbox?: OutboxOptions;
  cleanup?: CleanupOptions;
  /**
   * The `connectionName` given to `ClsPluginTransactional`, when the app names its
   * transactional connection (several data sources). Default: the unnamed one.
   */
  transactionConnectionName?: string;
}
