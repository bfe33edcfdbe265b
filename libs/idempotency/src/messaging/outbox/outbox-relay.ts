import { errorText } from '../../shared/error-text';
import {
  type BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import { Propagation } from '@nestjs-cls/transactional';
import { MESSAGING_OPTIONS } from '../messaging.constants';
import type { ResolvedMessagingOptions } from '../messaging.defaults';
import type { OutboxMessage } from '../messaging-transport';
import { type DueOutboxRow, OutboxStore } from './outbox.store';
import { MessagingTransactionHost } from '../messaging-transaction-host';

export interface RelayBatchResult {
  /** Rows this batch locked. */
  claimed: number;
  /** Confirmed by the broker and marked sent. */
  sent: number;
  /** Refused or timed out; retried after a backoff. */
  failed: number;
}

/**
 * Publishes pending outbox rows after their commit. Each batch is one transaction: lock due
 * rows (SKIP LOCKED), publish with broker confirms, mark them sent, commit. A relay that dies
 * after the broker confirmed and before the commit leaves the rows pending, unlocked by its
 * dead connection: they are published again under the same message id (at least once), and the
 * consumers' inbox drops the copy. Safe to run in every process at once.
 */
export abstract class OutboxRelay {
  /** Starts polling in the background; a no-op when already running. */
  abstract start(): void;

  /** Stops polling and waits for the batch in flight. */
  abstract stop(): Promise<void>;

  /** Relays one batch of due rows now. */
  abstract relayOnce(): Promise<RelayBatchResult>;
}

/** The implementation Nest constructs; apps use `OutboxRelay`. */
@Injectable()
export class OutboxRelayService
  extends OutboxRelay
  implements OnApplicationBootstrap, BeforeApplicationShutdown
{
  private readonly logger = new Logger('OutboxRelay');
  private running = false;
  private loop?: Promise<void>;
  private wake?: () => void;

  constructor(
    @Inject(MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    private readonly store: OutboxStore,
    private readonly txHost: MessagingTransactionHost,
  ) {
    super();
  }

  onApplicationBootstrap(): void {
    if (this.options.outbox.relay) this.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.stop();
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.poll();
    this.logger.log(
      `relay started (every ${this.options.outbox.pollIntervalMs} ms, batches of ${this.options.outbox.batchSize})`,
    );
  }

  async stop(): Promise<void> {
    this.running = false;
    this.wake?.();
    await this.loop;
    this.loop = undefined;
  }

  async relayOnce(): Promise<RelayBatchResult> {
    const transport = this.options.transport;
    if (!transport?.publish) throw new Error('OutboxRelay: the messaging transport cannot publish');
    const publish = transport.publish.bind(transport);
    const { batchSize, backoffBaseMs, backoffMaxMs, onPublished } = this.options.outbox;
    return this.txHost.withTransaction(Propagation.RequiresNew, async () => {
      const rows = await this.store.claimDue(batchSize);
      if (rows.length === 0) return { claimed: 0, sent: 0, failed: 0 };
      const messages = rows.map(toMessage);
      const results = await Promise.allSettled(messages.map((message) => publish(message)));
      await publishFailedOneByOne(messages, results, publish);
      const sent: OutboxMessage[] = [];
      const sentIds: string[] = [];
      const failures: Array<{ id: string; error: string }> = [];
      results.forEach((result, i) => {
        if (result.status === 'fulfilled') {
          sent.push(messages[i]);
          sentIds.push(rows[i].id);
        } else {
          failures.push({ id: rows[i].id, error: errorText(result.reason) });
        }
      });
      if (sent.length > 0) await onPublished?.(sent);
      await this.store.markSent(sentIds);
      await this.store.markFailed(failures, backoffBaseMs, backoffMaxMs);
      if (failures.length > 0) {
        this.logger.warn(
          `${failures.length} of ${rows.length} messages not confirmed, backing off: ${failures[0].error}`,
        );
      }
      return { claimed: rows.length, sent: sent.length, failed: failures.length };
    });
  }

  private async poll(): Promise<void> {
    while (this.running) {
      let full = false;
      try {
        const result = await this.relayOnce();
        full = result.claimed === this.options.outbox.batchSize;
      } catch (error) {
        this.logger.error(`relay batch failed: ${errorText(error)}`);
      }
      // A full batch means more may be due: go again at once; otherwise wait for the next poll.
      if (!full && this.running) await this.pause(this.options.outbox.pollIntervalMs);
    }
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
  }
}

/** How long the one-by-one pass may go on: its batch's rows stay locked meanwhile. */
const PASS_BUDGET_MS = 2_000;

/**
 * One publish the broker refuses can fail the others in flight with it: RabbitMQ closes the
 * channel they share (a missing exchange), and each gets "channel closed". Counted as failures,
 * they would back off in step with the refused row and be claimed, and fail, with it for as long
 * as it stays. So after a batch with more than one failure, the failed messages are published
 * again one at a time, in order, and `results` takes their outcomes. A broker refuses a whole
 * destination (an exchange missing or not permitted; under `mandatory`, a routing key no queue
 * is bound for), so once one message to an exchange and routing key fails again, the others to
 * them keep their failure without another try; and the pass ends once it has taken
 * `PASS_BUDGET_MS` (a broker that does not answer costs it one publish timeout), the rest
 * keeping their first outcome.
 */
async function publishFailedOneByOne(
  messages: readonly OutboxMessage[],
  results: PromiseSettledResult<unknown>[],
  publish: (message: OutboxMessage) => Promise<unknown>,
): Promise<void> {
  const failed = results.flatMap((result, i) => (result.status === 'rejected' ? [i] : []));
  if (failed.length < 2) return;
  const started = performance.now();
  const refused = new Set<string>();
  for (const i of failed) {
    const destination = `${messages[i].exchange}\u0000${messages[i].routingKey}`;
    if (refused.has(destination)) continue;
    try {
      results[i] = { status: 'fulfilled', value: await publish(messages[i]) };
    } catch (error) {
      results[i] = { status: 'rejected', reason: error };
      refused.add(destination);
    }
    if (performance.now() - started >= PASS_BUDGET_MS) return;
  }
}

function toMessage({ id: _id, ...message }: DueOutboxRow): OutboxMessage {
  return message;
}
