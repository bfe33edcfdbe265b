import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { AppProcess } from '../support/app-process';
import { TestDatabase } from '../support/database';
import { createOrder, getOrder } from './support/messaging-app';

const DIST = resolve(__dirname, '../../dist/apps/payments-api');

/** Which broker packages a fresh Node process has loaded after requiring `modules`. */
function brokerPackagesLoadedBy(modules: string[], then = ''): string[] {
  const script = `
    for (const m of ${JSON.stringify(modules)}) require(m);
    ${then}
    const loaded = Object.keys(require.cache);
    console.log(JSON.stringify(['amqplib', 'amqp-connection-manager'].filter((p) => loaded.some((f) => f.includes('/node_modules/' + p + '/')))));`;
  return JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' }).trim());
}

describe('without AMQP_URL: messaging is off', () => {
  it('never loads amqplib when the library and the demo are loaded and configured without a broker', () => {
    const library = `${DIST}/libs/idempotency/src/index.js`;
    const messaging = `${DIST}/libs/idempotency/src/messaging/index.js`;
    const rabbitmq = `${DIST}/libs/idempotency/src/rabbitmq/index.js`;
    const appModule = `${DIST}/apps/payments-api/src/app.module.js`;
    const microservice = `${DIST}/apps/payments-api/src/messaging/order-payments.microservice.js`;
    // A RabbitMqTransport that is constructed but not started must not load it either.
    const configure = `
      const { AppModule } = require(${JSON.stringify(appModule)});
      AppModule.register({ databaseUrl: 'postgres://unused', demoFaults: false });
      new (require(${JSON.stringify(rabbitmq)}).RabbitMqTransport)({ url: 'amqp://unused' });`;
    expect(
      brokerPackagesLoadedBy([library, messaging, rabbitmq, appModule, microservice], configure),
    ).toEqual([]);
    // The check can fail: starting the transport's loader does load them.
    expect(brokerPackagesLoadedBy([library], `require('amqp-connection-manager');`)).toEqual([
      'amqplib',
      'amqp-connection-manager',
    ]);
  });

  describe('the demo process', () => {
    let app: AppProcess;
    let db: TestDatabase;
    beforeAll(async () => {
      db = new TestDatabase();
      app = await AppProcess.start(); // AppProcess turns messaging off unless given AMQP_URL
    });
    afterAll(async () => {
      await app?.stop();
      await db?.close();
    });

    it('starts, says messaging is off, and serves orders with paidCents 0 and no outbox event', async () => {
      await app.waitForLog(/AMQP_URL is not set: messaging is off/);
      const orderId = await createOrder(app.url, 1234);
      expect(await getOrder(app.url, orderId)).toMatchObject({
        id: orderId,
        amountCents: 1234,
        paidCents: 0,
      });
      const events = await db.query(
        `SELECT 1 FROM outbox_messages WHERE payload->>'orderId' = $1`,
        [orderId],
      );
      expect(events).toHaveLength(0);
    });
  });
});
