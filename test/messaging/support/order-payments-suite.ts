import type { AppProcess } from '../../support/app-process';
import { TestDatabase } from '../../support/database';
import { TestBroker, uniqueQueue } from './broker';
import { type MessagingAppOptions, startMessagingApp } from './messaging-app';

/** What a suite of the demo's order-payments consumer works with. */
export interface OrderPaymentsSuite {
  broker: TestBroker;
  app: AppProcess;
  db: TestDatabase;
  /** The suite's own order-payments queue. */
  queue: string;
  /** Its dead-letter queue, `<queue>.dead`. */
  deadLetters: string;
}

/**
 * Registers the suite's set-up and tear-down: a queue of its own and its dead-letter queue, a
 * connection for assertions, and the demo consuming that queue as a real process. The returned
 * object is filled in by `beforeAll`.
 */
export function orderPaymentsSuite(
  options: Omit<MessagingAppOptions, 'queue'> = {},
): OrderPaymentsSuite {
  const suite = {} as OrderPaymentsSuite;
  beforeAll(async () => {
    suite.broker = await TestBroker.connect();
    suite.queue = await suite.broker.queue(uniqueQueue('order-payments'));
    suite.deadLetters = await suite.broker.queue(`${suite.queue}.dead`);
    suite.db = new TestDatabase();
    suite.app = await startMessagingApp({ ...options, queue: suite.queue });
  });
  afterAll(async () => {
    await suite.app?.stop();
    await suite.broker?.close();
    await suite.db?.close();
  });
  return suite;
}
