import { randomUUID } from 'node:crypto';
import { Logger, type LoggerService } from '@nestjs/common';
import { RabbitMqTransport } from 'nestjs-pg-idempotency/rabbitmq';
import { sleep } from '../support/eventually';
import { brokerUrl, describeWithBroker, TestBroker, uniqueQueue } from './support/broker';

/** Collects what the library logs, by level. */
class CapturingLogger implements LoggerService {
  readonly lines: Array<{ level: string; message: string }> = [];
  log = (message: unknown) => this.push('log', message);
  error = (message: unknown) => this.push('error', message);
  warn = (message: unknown) => this.push('warn', message);
  debug = (message: unknown) => this.push('debug', message);
  verbose = (message: unknown) => this.push('verbose', message);
  private push(level: string, message: unknown): void {
    this.lines.push({ level, message: String(message) });
  }
}

/**
 * The transport on its own, against the real broker, where its topology does not match what
 * the broker holds: every channel it opens fails its setup. That must be logged and retried
 * at a slowing pace, never end the process (an 'error' event nobody listens to would).
 */
describeWithBroker('RabbitMqTransport: a topology the broker refuses', () => {
  let broker: TestBroker;
  let logger: CapturingLogger;
  const crashes: unknown[] = [];
  const onCrash = (error: unknown) => crashes.push(error);

  beforeAll(async () => {
    broker = await TestBroker.connect();
    logger = new CapturingLogger();
    Logger.overrideLogger(logger);
    process.on('uncaughtException', onCrash);
    process.on('unhandledRejection', onCrash);
  });
  afterAll(async () => {
    process.off('uncaughtException', onCrash);
    process.off('unhandledRejection', onCrash);
    Logger.overrideLogger(new Logger());
    await broker?.close();
  });

  it('logs the refused setup and keeps trying, slower and slower, without crashing the process', async () => {
    const exchange = `test.conflict.${randomUUID().slice(0, 8)}`;
    await broker.channel.assertExchange(exchange, 'fanout', { durable: false, autoDelete: false });
    const transport = new RabbitMqTransport({
      url: brokerUrl(),
      topology: { exchanges: [{ name: exchange, type: 'topic' }] }, // PRECONDITION_FAILED: it is a fanout
      connectTimeoutMs: 1000,
    });
    try {
      await transport.start();
      await sleep(3000);
    } finally {
      await transport.close();
      await broker.channel.deleteExchange(exchange).catch(() => undefined);
    }
    expect(crashes).toEqual([]);
    const errors = logger.lines.filter(
      (line) => line.level === 'error' && /PRECONDITION_FAILED|inequivalent/i.test(line.message),
    );
    expect(errors.length).toBeGreaterThan(0);
    // Reopened with a growing delay (0.1 s, 0.2 s, 0.4 s…): a handful in 3 s, not one every 100 ms.
    const reopened = logger.lines.filter((line) => /opening a new one/.test(line.message));
    expect(reopened.length).toBeLessThanOrEqual(6);
  });
});

/** `mandatory`: an event no queue receives must not be confirmed and dropped in silence. */
describeWithBroker('RabbitMqTransport: mandatory publishes', () => {
  let broker: TestBroker;
  let exchange: string;

  beforeAll(async () => {
    broker = await TestBroker.connect();
    exchange = `test.mandatory.${randomUUID().slice(0, 8)}`;
    await broker.channel.assertExchange(exchange, 'topic', { durable: true });
  });
  afterAll(async () => {
    await broker?.channel.deleteExchange(exchange).catch(() => undefined);
    await broker?.close();
  });

  const eventFor = (routingKey: string) => ({
    messageId: randomUUID(),
    exchange,
    routingKey,
    payload: { probe: routingKey },
    headers: {},
    createdAt: new Date(),
    attempts: 0,
  });

  it('fails a publish that no queue receives, and delivers it once a queue is bound', async () => {
    const transport = new RabbitMqTransport({ url: brokerUrl(), mandatory: true });
    await transport.start();
    try {
      const event = eventFor('payment.captured');
      await expect(transport.publish(event)).rejects.toThrow(/unroutable/);

      const queue = await broker.queue(uniqueQueue('mandatory'), [
        { exchange, routingKey: 'payment.*' },
      ]);
      await transport.publish({ ...event, attempts: 1 });
      const delivered = await broker.take(
        queue,
        (message) => message.messageId === event.messageId,
      );
      expect(delivered.body).toEqual({ probe: 'payment.captured' });
      // The channel survived the return: the next publish goes through as well.
      const next = eventFor('payment.refunded');
      await transport.publish(next);
      await broker.take(queue, (message) => message.messageId === next.messageId);
    } finally {
      await transport.close();
    }
  });

  it('confirms an unroutable publish without it, as AMQP does: the broker drops the event', async () => {
    const transport = new RabbitMqTransport({ url: brokerUrl() });
    await transport.start();
    try {
      await expect(transport.publish(eventFor('nobody.listens'))).resolves.toBeUndefined();
    } finally {
      await transport.close();
    }
  });
});
