import { randomUUID } from 'node:crypto';
import type { ExecutionContext } from '@nestjs/common';
import { type Channel, type ChannelModel, connect, type ConsumeMessage } from 'amqplib';
import type { DeadLetterReason } from 'nestjs-pg-idempotency/messaging';
import { RabbitMqTransport } from 'nestjs-pg-idempotency/rabbitmq';
import { sleep } from '../support/eventually';
import { brokerUrl, describeWithBroker, uniqueQueue } from './support/broker';

/** Nest's RMQ execution context around a real delivery, as the inbox interceptor gets it. */
function rmqContext(message: ConsumeMessage, channel: Channel): ExecutionContext {
  return {
    getType: () => 'rpc',
    switchToRpc: () => ({
      getContext: () => ({ getMessage: () => message, getChannelRef: () => channel }),
    }),
  } as unknown as ExecutionContext;
}

const outboxMessage = (exchange: string) => ({
  messageId: randomUUID(),
  exchange,
  routingKey: 'r',
  payload: {},
  headers: {},
  createdAt: new Date(),
  attempts: 0,
});

/** The setups of the transport's publisher channel (amqp-connection-manager's own list). */
function setupCount(transport: RabbitMqTransport): number {
  return (transport as unknown as { channel: { _setups: unknown[] } }).channel._setups.length;
}

/**
 * The transport against the real broker where the broker's state moved under it: a dead-letter
 * queue deleted after the transport declared it, and a transport started again after close().
 */
describeWithBroker('RabbitMqTransport: dead-letter copies and restarts', () => {
  let connection: ChannelModel;
  let channel: Channel;

  beforeAll(async () => {
    connection = await connect(brokerUrl());
    channel = await connection.createChannel();
  });

  afterAll(() => connection.close());

  async function take(queue: string): Promise<ConsumeMessage> {
    for (let tries = 0; tries < 100; tries++) {
      const message = await channel.get(queue, { noAck: false });
      // A basic.get's fields lack the consumer tag, which neither the transport nor this reads.
      if (message) return message as unknown as ConsumeMessage;
      await sleep(20);
    }
    throw new Error(`nothing on ${queue}`);
  }

  /** The messages on `queue`, or undefined when there is no such queue. */
  async function depth(queue: string): Promise<number | undefined> {
    const probe = await connection.createChannel();
    probe.on('error', () => undefined);
    try {
      return (await probe.checkQueue(queue)).messageCount;
    } catch {
      return undefined;
    } finally {
      await probe.close().catch(() => undefined);
    }
  }

  it('keeps the original when its dead-letter queue was deleted since it was declared, and declares it again', async () => {
    const consumer = uniqueQueue('dead-copies');
    const source = `${consumer}.source`;
    const deadLetters = `${consumer}.dead`;
    await channel.assertQueue(source, { durable: true });
    const transport = new RabbitMqTransport({ url: brokerUrl() });
    await transport.start();
    const reason: DeadLetterReason = { code: 'unprocessable', consumer, detail: 'x', attempts: 0 };
    const deadLetter = (delivered: ConsumeMessage) => {
      const delivery = transport.delivery(rmqContext(delivered, channel), consumer);
      if (!delivery) throw new Error('the transport did not take an RMQ context');
      return delivery.deadLetter(reason);
    };
    const deliverNew = async (body: string) => {
      channel.sendToQueue(source, Buffer.from(body), { messageId: randomUUID() });
      return take(source);
    };
    try {
      await deadLetter(await deliverNew('{"n":1}'));
      expect(await depth(deadLetters)).toBe(1);
      // An operator clears the dead letters by deleting the queue.
      await channel.deleteQueue(deadLetters);
      const second = await deliverNew('{"n":2}');
      // The copy came back: an error, so the inbox keeps the original (it retries).
      await expect(deadLetter(second)).rejects.toThrow(/dead-letter queue .* is gone/);
      expect(await depth(deadLetters)).toBeUndefined();
      // Its next attempt declares the queue again, and the copy lands.
      await deadLetter(second);
      const copy = await take(deadLetters);
      expect(copy.content.toString()).toBe('{"n":2}');
      channel.ack(copy);
      // Gone and declared again twice more: the publisher channel keeps one setup for the queue
      // (amqp-connection-manager's list, which every reconnect runs again), not one per return.
      const setups = setupCount(transport);
      for (let round = 3; round <= 4; round++) {
        await channel.deleteQueue(deadLetters);
        const again = await deliverNew(`{"n":${round}}`);
        await expect(deadLetter(again)).rejects.toThrow(/is gone/);
        await deadLetter(again);
        channel.ack(await take(deadLetters));
      }
      expect(setupCount(transport)).toBe(setups);
    } finally {
      await transport.close();
      await channel.deleteQueue(source).catch(() => undefined);
      await channel.deleteQueue(deadLetters).catch(() => undefined);
    }
  });

  it("judges a returned event by its message id, even when it carries a dead-letter copy's header", async () => {
    const transport = new RabbitMqTransport({ url: brokerUrl(), mandatory: true });
    await transport.start();
    try {
      // An event whose headers were forwarded from a message that was once a dead letter.
      const forwarded = {
        ...outboxMessage('amq.topic'),
        routingKey: `test.unbound.${randomUUID()}`,
        headers: { 'x-inbox-copy-id': randomUUID() },
      };
      await expect(transport.publish(forwarded)).rejects.toThrow(/unroutable/);
    } finally {
      await transport.close();
    }
  });

  it('replaces a broken publisher channel after close() and start() again', async () => {
    const transport = new RabbitMqTransport({ url: brokerUrl(), publishTimeoutMs: 2000 });
    await transport.start();
    await transport.close();
    // One transport in two apps, as e2e suites build them from one module.
    await transport.start();
    try {
      await expect(
        transport.publish(outboxMessage(`test.missing.${randomUUID()}`)),
      ).rejects.toThrow();
      await sleep(1000);
      await expect(transport.publish(outboxMessage('amq.topic'))).resolves.toBeUndefined();
    } finally {
      await transport.close();
    }
  });
});
