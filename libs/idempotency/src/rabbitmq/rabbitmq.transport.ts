import { randomUUID } from 'node:crypto';
import type { ExecutionContext } from '@nestjs/common';
import { Logger } from '@nestjs/common';
import type { RmqContext } from '@nestjs/microservices';
import type * as AmqpConnectionManager from 'amqp-connection-manager';
import type { Channel, ConfirmChannel, ConsumeMessage, Options } from 'amqplib';
import type {
  DeadLetterReason,
  InboxDelivery,
  MessagingTransport,
  OutboxMessage,
} from '../messaging/messaging-transport';
import {
  DROPPED_PROPERTIES_HEADER,
  encodableCopyHeaders,
  encodableShortStrings,
  unencodableHeaders,
} from './amqp-headers';
import { RabbitMqDelivery } from './rabbitmq-delivery';

export interface RabbitMqTopology {
  /** Declared durable on every (re)connect. */
  exchanges?: Array<{ name: string; type: 'topic' | 'direct' | 'fanout' | 'headers' }>;
  /** Declared durable on every (re)connect, with their bindings. */
  queues?: Array<{ name: string; bindings?: Array<{ exchange: string; routingKey: string }> }>;
}

export interface RabbitMqTransportOptions {
  /** `amqp://user:password@host:5672`; several for a cluster. */
  url: string | string[];
  topology?: RabbitMqTopology;
  /** Dead-letter queue per consumer name; default `<consumer>.dead`. Declared durable before use. */
  deadLetterQueues?: Record<string, string>;
  /**
   * Publishes outbox rows as `mandatory`: one that no queue receives (no binding matches its
   * routing key) comes back from the broker, fails, and stays pending for the relay to retry with
   * backoff, instead of being confirmed and dropped. Default false, AMQP's usual: an event with
   * no subscriber yet is nobody's loss.
   */
  mandatory?: boolean;
  /** A publish not confirmed within this time fails (the relay retries it). Default 10000 ms. */
  publishTimeoutMs?: number;
  /** How long `start()` waits for the first connection before going on. Default 10000 ms. */
  connectTimeoutMs?: number;
}

type ConnectionManager = AmqpConnectionManager.AmqpConnectionManager;
type ChannelWrapper = AmqpConnectionManager.ChannelWrapper;

/**
 * RabbitMQ for the messaging module: publishes outbox rows with publisher confirms on its own
 * connection, and gives `@InboxHandler()` the deliveries of Nest's RMQ transport (manual acks,
 * `noAck: false`). `amqp-connection-manager` (and so `amqplib`) is loaded on `start()`, never
 * on import: an app that does not use RabbitMQ never loads them.
 */
export class RabbitMqTransport implements MessagingTransport {
  private readonly logger = new Logger('RabbitMqTransport');
  private connection?: ConnectionManager;
  private channel?: ChannelWrapper;
  /** Queues the publisher channel declares on every (re)connect (its topology, or `addSetup`). */
  private readonly declaredQueues = new Set<string>();
  /** Of those, queues a dead-letter copy found gone: declared again before the next copy. */
  private readonly goneQueues = new Set<string>();
  private lastChannelError?: string;
  /** Message ids of mandatory publishes the broker returned as unroutable, until their confirm. */
  private readonly returned = new Set<string>();
  /** Ids of the dead-letter copies being published, until their confirm. */
  private readonly pendingCopies = new Set<string>();
  /** Channels replaced in a row without one connecting: the next replacement waits longer. */
  private failedReplacements = 0;
  /** Settles when the channel the broker closed has its replacement (`replaceChannel`). */
  private replacement?: Promise<void>;
  private closing = false;

  constructor(private readonly options: RabbitMqTransportOptions) {}

  async start(): Promise<void> {
    if (this.connection) return;
    // Started again after close() (one transport in two apps, as e2e suites build them): what
    // the last connection left must not stop this one from replacing a broken channel.
    this.closing = false;
    this.failedReplacements = 0;
    this.lastChannelError = undefined;
    this.returned.clear();
    // Deferred on purpose: see the class comment.
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- an optional peer, loaded when a transport starts
    const acm = require('amqp-connection-manager') as typeof AmqpConnectionManager;
    const urls = Array.isArray(this.options.url) ? this.options.url : [this.options.url];
    const connection = acm.connect(urls, {
      heartbeatIntervalInSeconds: 10,
      reconnectTimeInSeconds: 1,
    });
    connection.on('disconnect', ({ err }) =>
      this.logger.warn(`disconnected: ${err?.message ?? 'closed'}`),
    );
    this.connection = connection;
    const channel = this.openChannel();
    const timeoutMs = this.options.connectTimeoutMs ?? 10_000;
    try {
      await withTimeout(channel.waitForConnect(), timeoutMs);
    } catch {
      this.logger.warn(`not connected after ${timeoutMs} ms; publishing waits for the connection`);
    }
  }

  async close(): Promise<void> {
    this.closing = true;
    await this.channel?.close().catch(() => undefined);
    await this.connection?.close().catch(() => undefined);
    this.channel = undefined;
    this.connection = undefined;
  }

  async publish(message: OutboxMessage): Promise<void> {
    const mandatory = this.options.mandatory === true;
    const options: Options.Publish = {
      mandatory,
      messageId: message.messageId,
      contentType: 'application/json',
      persistent: true,
      timestamp: Math.floor(message.createdAt.getTime() / 1000),
      type: message.routingKey,
      headers: message.headers,
    };
    // Refused before the channel sees it (see unencodableHeaders): a row written before
    // Outbox.publish checked its headers stays pending, and the other events still go.
    const unencodable = unencodableHeaders(message.headers);
    if (unencodable !== undefined) {
      throw new Error(`its headers cannot be encoded for AMQP (${unencodable}): not sent`);
    }
    try {
      await (
        await this.readyChannel()
      ).publish(
        message.exchange,
        message.routingKey,
        Buffer.from(JSON.stringify(message.payload), 'utf8'),
        options,
      );
    } catch (error) {
      this.returned.delete(message.messageId);
      const reason = this.lastChannelError;
      this.lastChannelError = undefined;
      throw reason
        ? new Error(`${error instanceof Error ? error.message : String(error)}: ${reason}`)
        : error;
    }
    // The broker sends basic.return before the confirm of the same message, so it is known here.
    if (mandatory && this.returned.delete(message.messageId)) {
      throw new Error(
        `unroutable: no queue is bound to exchange "${message.exchange}" for "${message.routingKey}"`,
      );
    }
  }

  /** Headers amqplib cannot encode (a number below −2^63, over 64 KiB in all): `Outbox.publish` refuses them. */
  unsendableHeaders(headers: Record<string, unknown>): string | undefined {
    const unencodable = unencodableHeaders(headers);
    return unencodable === undefined ? undefined : `AMQP cannot encode them (${unencodable})`;
  }

  delivery(context: ExecutionContext, consumer: string): InboxDelivery | undefined {
    if (context.getType() !== 'rpc') return undefined;
    const rmq = context.switchToRpc().getContext<Partial<RmqContext>>();
    if (typeof rmq?.getMessage !== 'function' || typeof rmq.getChannelRef !== 'function')
      return undefined;
    const queue = this.deadLetterQueue(consumer);
    const channel = rmq.getChannelRef() as Channel;
    const message = rmq.getMessage() as ConsumeMessage;
    return new RabbitMqDelivery(channel, message, (delivered, reason) =>
      this.sendToDeadLetterQueue(queue, delivered, reason),
    );
  }

  /** The publisher channel: confirms on, topology declared on every (re)connect. */
  private openChannel(): ChannelWrapper {
    this.declaredQueues.clear();
    this.goneQueues.clear();
    const wrapper = (this.connection as ConnectionManager).createChannel({
      json: false,
      confirm: true,
      publishTimeout: this.options.publishTimeoutMs ?? 10_000,
      setup: (channel: ConfirmChannel) => {
        let failed = false;
        channel.on('error', (error: Error) => {
          // The broker's reason (NOT_FOUND for a missing exchange…) only reaches this event;
          // the failed publish itself just says "channel closed".
          this.lastChannelError = error.message;
          failed = true;
        });
        channel.on('return', (returned: ConsumeMessage) => {
          // A dead-letter copy is known by a header of its own: it may share its message id
          // with an event the relay publishes.
          const headers: Record<string, unknown> | undefined = returned.properties.headers;
          const copy = headers?.[COPY_ID_HEADER];
          // Only a copy this transport is sending: an event may carry the header (forwarded
          // from a message that was once a dead letter) and is then judged by its message id.
          if (typeof copy === 'string' && this.pendingCopies.has(copy)) {
            this.returned.add(copyKey(copy));
            return;
          }
          const id = returned.properties.messageId as string | undefined;
          if (id !== undefined) this.returned.add(id);
        });
        channel.once('close', () => {
          if (failed) this.replaceChannel(wrapper);
          // Publishes it had not confirmed are sent again: consumers may see a second copy.
          else if (!this.closing)
            this.logger.warn('publisher channel closed; unconfirmed publishes will be sent again');
        });
        return this.declareTopology(channel);
      },
    });
    // amqp-connection-manager reports a failed setup (a topology the broker refuses) as an
    // 'error' event: unheard, Node would end the process over it.
    wrapper.on('error', (error: Error) =>
      this.logger.error(`publisher channel setup failed: ${error.message}`),
    );
    wrapper.on('connect', () => (this.failedReplacements = 0));
    this.channel = wrapper;
    return wrapper;
  }

  /**
   * A channel error (one publish to a missing exchange) closes the channel but not the
   * connection, and amqp-connection-manager reopens channels only when it reconnects: without
   * this, every later publish would wait for a reconnect that never comes. Messages still queued
   * on the old channel fail and the relay retries them.
   */
  private replaceChannel(broken: ChannelWrapper): void {
    // 0.1 s, then twice as long each time a new channel fails too (a setup the broker keeps
    // refusing), up to 30 s; a channel that connects resets it.
    const delayMs = Math.min(100 * 2 ** this.failedReplacements, 30_000);
    this.failedReplacements++;
    let replaced!: () => void;
    this.replacement = new Promise<void>((resolve) => (replaced = resolve));
    const timer = setTimeout(() => {
      this.replacement = undefined;
      replaced();
      if (this.closing || this.channel !== broken || !this.connection) return;
      this.logger.warn(
        `channel closed by the broker (${this.lastChannelError ?? 'no reason'}); opening a new one`,
      );
      this.openChannel();
      void broken.close().catch(() => undefined);
    }, delayMs);
    timer.unref();
  }

  private deadLetterQueue(consumer: string): string {
    return this.options.deadLetterQueues?.[consumer] ?? `${consumer}.dead`;
  }

  /** A copy on the dead-letter queue, with why it is there; confirmed before this resolves. */
  private async sendToDeadLetterQueue(
    queue: string,
    message: ConsumeMessage,
    reason: DeadLetterReason,
  ): Promise<void> {
    const channel = await this.readyChannel();
    // Publishing to a queue that does not exist is confirmed and dropped: declare it first. Its
    // setup is added once per channel, so a queue that keeps going does not pile up setups.
    if (!this.declaredQueues.has(queue)) {
      await channel.addSetup((ch: ConfirmChannel) => ch.assertQueue(queue, { durable: true }));
      this.declaredQueues.add(queue);
      this.goneQueues.delete(queue);
    } else if (this.goneQueues.has(queue)) {
      await channel.assertQueue(queue, { durable: true });
      this.goneQueues.delete(queue);
    }
    const { fields, content } = message;
    // amqplib types a received message's properties as `any`; they are the publish options.
    const properties: Options.Publish = message.properties;
    // Mandatory: a queue deleted since it was declared (to clear it, or by `x-expires`) would
    // otherwise take the copy, confirmed, into nothing, and the original would be acked.
    const copyId = randomUUID();
    this.pendingCopies.add(copyId);
    try {
      await this.publishCopy(channel, queue, content, properties, fields, reason, copyId);
    } catch (error) {
      this.returned.delete(copyKey(copyId));
      throw error;
    } finally {
      this.pendingCopies.delete(copyId);
    }
    if (this.returned.delete(copyKey(copyId))) {
      this.goneQueues.add(queue);
      throw new Error(
        `dead-letter queue "${queue}" is gone (deleted since it was declared): the copy came back; ` +
          'it is declared again at the next attempt',
      );
    }
  }

  private publishCopy(
    channel: ChannelWrapper,
    queue: string,
    content: Buffer,
    properties: Options.Publish,
    fields: ConsumeMessage['fields'],
    reason: DeadLetterReason,
    copyId: string,
  ): Promise<unknown> {
    const { kept, dropped } = encodableShortStrings(properties, COPIED_SHORT_STRINGS);
    return channel.publish('', queue, content, {
      mandatory: true,
      ...kept,
      timestamp: properties.timestamp,
      persistent: true,
      headers: encodableCopyHeaders((properties.headers ?? {}) as Record<string, unknown>, {
        ...(dropped.length > 0 ? { [DROPPED_PROPERTIES_HEADER]: dropped.join(',') } : {}),
        'x-inbox-consumer': reason.consumer,
        'x-inbox-reason': reason.code,
        'x-inbox-detail': reason.detail.slice(0, 1000),
        'x-inbox-attempts': reason.attempts,
        'x-original-exchange': fields.exchange,
        'x-original-routing-key': fields.routingKey,
        [COPY_ID_HEADER]: copyId,
      }),
    });
  }

  private async declareTopology(channel: ConfirmChannel): Promise<void> {
    const { exchanges = [], queues = [] } = this.options.topology ?? {};
    for (const exchange of exchanges) {
      await channel.assertExchange(exchange.name, exchange.type, { durable: true });
    }
    for (const queue of queues) {
      await channel.assertQueue(queue.name, { durable: true });
      for (const binding of queue.bindings ?? []) {
        await channel.bindQueue(queue.name, binding.exchange, binding.routingKey);
      }
    }
    for (const queue of Object.values(this.options.deadLetterQueues ?? {})) {
      await channel.assertQueue(queue, { durable: true });
      this.declaredQueues.add(queue);
    }
  }

  /**
   * The channel to publish on. After the broker closed one (a publish to a missing exchange),
   * this waits for its replacement, up to `publishTimeoutMs`: published on the closed one, a
   * message would fail at once with "Channel closed", for a fault that is not its own.
   */
  private async readyChannel(): Promise<ChannelWrapper> {
    if (this.replacement) {
      await withTimeout(this.replacement, this.options.publishTimeoutMs ?? 10_000).catch(
        () => undefined,
      );
    }
    return this.requireChannel();
  }

  private requireChannel(): ChannelWrapper {
    if (!this.channel) throw new Error('RabbitMqTransport is not started');
    return this.channel;
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** The short-string properties a dead-letter copy keeps (with `timestamp`). */
const COPIED_SHORT_STRINGS = [
  'contentType',
  'contentEncoding',
  'messageId',
  'correlationId',
  'type',
  'appId',
] as const;

/** Marks a dead-letter copy, so a return of it is told from a return of a relayed event. */
const COPY_ID_HEADER = 'x-inbox-copy-id';

function copyKey(copyId: string): string {
  return `copy:${copyId}`;
}
