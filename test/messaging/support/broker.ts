import { randomUUID } from 'node:crypto';
import {
  type ConfirmChannel,
  type ChannelModel,
  connect,
  type Message,
  type Options,
} from 'amqplib';
import { sleep } from '../../support/eventually';

/** The RabbitMQ of this run (globalSetup checked it). */
export function brokerUrl(): string {
  const url = process.env.TEST_AMQP_URL;
  if (!url) throw new Error('TEST_AMQP_URL is not set: run the tests through jest (globalSetup)');
  return url;
}

/**
 * `describe` when the broker answered in globalSetup, else `describe.skip` with the reason in
 * its name, so the report says why. With REQUIRE_BROKER=1 globalSetup fails instead.
 */
export function describeWithBroker(name: string, suite: () => void): void {
  const status = process.env.TEST_BROKER_STATUS;
  if (status === 'up') describe(name, suite);
  else describe.skip(`${name} [SKIPPED: ${status ?? 'broker not checked'}]`, suite);
}

/** A queue name no other test uses; deleted again by `TestBroker.close()`. */
export const uniqueQueue = (prefix: string): string => `test.${prefix}.${randomUUID().slice(0, 8)}`;

/** A message as a test saw it on a queue. */
export interface SeenMessage {
  messageId: string | undefined;
  headers: Record<string, unknown>;
  body: unknown;
  redelivered: boolean;
}

/**
 * The test's own AMQP client: publishes with confirms like any producer, and reads queues to
 * assert on what the broker really holds.
 */
export class TestBroker {
  private readonly ownQueues = new Set<string>();
  private readonly consumerTags: string[] = [];

  private constructor(
    private readonly connection: ChannelModel,
    readonly channel: ConfirmChannel,
  ) {}

  static async connect(): Promise<TestBroker> {
    const connection = await connect(brokerUrl());
    return new TestBroker(connection, await connection.createConfirmChannel());
  }

  /** Declares a durable queue (as the demo does) and remembers to delete it. */
  async queue(
    name: string,
    bindings: Array<{ exchange: string; routingKey: string }> = [],
  ): Promise<string> {
    await this.channel.assertQueue(name, { durable: true });
    for (const binding of bindings) {
      await this.channel.assertExchange(binding.exchange, 'topic', { durable: true });
      await this.channel.bindQueue(name, binding.exchange, binding.routingKey);
    }
    this.ownQueues.add(name);
    return name;
  }

  /** Sends JSON (or raw bytes for a string) straight to a queue and waits for the confirm. */
  async send(queue: string, body: unknown, options: Options.Publish = {}): Promise<void> {
    this.channel.sendToQueue(queue, encode(body), {
      persistent: true,
      contentType: 'application/json',
      ...options,
    });
    await this.channel.waitForConfirms();
  }

  /** Sends many without waiting for each confirm, then waits for all of them. */
  async sendAll(
    queue: string,
    messages: Array<{ body: unknown; options?: Options.Publish }>,
  ): Promise<void> {
    for (const { body, options } of messages) {
      this.channel.sendToQueue(queue, encode(body), {
        persistent: true,
        contentType: 'application/json',
        ...options,
      });
    }
    await this.channel.waitForConfirms();
  }

  /** Ready messages (unacked ones are not counted) and consumers of a queue. */
  async stats(queue: string): Promise<{ messageCount: number; consumerCount: number }> {
    const { messageCount, consumerCount } = await this.channel.checkQueue(queue);
    return { messageCount, consumerCount };
  }

  /** Takes every message off a queue (acking it) until it has been empty for `quietMs`. */
  async drain(queue: string, quietMs = 300): Promise<SeenMessage[]> {
    const seen: SeenMessage[] = [];
    let quietSince = Date.now();
    while (Date.now() - quietSince < quietMs) {
      const message = await this.channel.get(queue, { noAck: true });
      if (message) {
        seen.push(toSeen(message));
        quietSince = Date.now();
      } else {
        await sleep(25);
      }
    }
    return seen;
  }

  /**
   * Takes the first message of `queue` that matches, acking it; every other message is handed
   * back untouched, so a shared queue (the demo's default dead-letter queue) keeps what is not ours.
   */
  async take(
    queue: string,
    matches: (message: SeenMessage) => boolean,
    timeoutMs = 15_000,
  ): Promise<SeenMessage> {
    const deadline = Date.now() + timeoutMs;
    const others: Message[] = [];
    try {
      for (;;) {
        const message = await this.channel.get(queue, { noAck: false });
        if (message) {
          const seen = toSeen(message);
          if (matches(seen)) {
            this.channel.ack(message);
            return seen;
          }
          others.push(message); // held unacked: get() moves on to the next one
        } else if (Date.now() > deadline) {
          throw new Error(`no matching message on ${queue} within ${timeoutMs} ms`);
        } else {
          await sleep(50);
        }
      }
    } finally {
      for (const message of others) this.channel.nack(message, false, true);
    }
  }

  /** Records every message arriving on `queue` into the returned array, as it arrives. */
  async record(queue: string): Promise<SeenMessage[]> {
    const seen: SeenMessage[] = [];
    const { consumerTag } = await this.channel.consume(
      queue,
      (message) => {
        if (message) seen.push(toSeen(message));
      },
      { noAck: true },
    );
    this.consumerTags.push(consumerTag);
    return seen;
  }

  async close(): Promise<void> {
    for (const tag of this.consumerTags) await this.channel.cancel(tag).catch(() => undefined);
    for (const queue of this.ownQueues)
      await this.channel.deleteQueue(queue).catch(() => undefined);
    await this.connection.close().catch(() => undefined);
  }
}

function encode(body: unknown): Buffer {
  return Buffer.isBuffer(body)
    ? body
    : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body), 'utf8');
}

function toSeen(message: Message): SeenMessage {
  const text = message.content.toString('utf8');
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: kept as text
  }
  return {
    messageId: message.properties.messageId as string | undefined,
    headers: message.properties.headers ?? {},
    body,
    redelivered: message.fields.redelivered,
  };
}
