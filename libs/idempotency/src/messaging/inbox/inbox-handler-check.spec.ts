import { Controller, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { EventPattern, MessagePattern, Payload, Transport } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { IdempotencyMessagingModule } from '../messaging.module';
import { InboxHandler } from './inbox-handler.decorator';
import { InboxHandlerCheck } from './inbox-handler-check';
import { InboxInterceptor } from './inbox.interceptor';

@Controller()
class Ledger {
  @EventPattern('order.paid')
  @InboxHandler('ledger')
  apply(@Payload() payload: unknown) {
    return payload;
  }
}

@Controller()
class Notifier {
  @EventPattern('order.paid')
  @InboxHandler('notifier')
  apply(@Payload() payload: unknown) {
    return payload;
  }
}

@Controller()
class Requests {
  @MessagePattern({ cmd: 'pay', v: 1 })
  @InboxHandler('pay-a')
  first(@Payload() payload: unknown) {
    return payload;
  }

  // The same object pattern, its keys in another order: Nest routes it to the same handler.
  @MessagePattern({ v: 1, cmd: 'pay' })
  @InboxHandler('pay-b')
  second(@Payload() payload: unknown) {
    return payload;
  }
}

@Controller()
class Refunds {
  @EventPattern('order.refunded')
  @InboxHandler('refunds')
  apply(@Payload() payload: unknown) {
    return payload;
  }
}

@Controller()
class NatsNotifier {
  @EventPattern('order.paid', Transport.NATS)
  @InboxHandler('nats-notifier')
  apply(@Payload() payload: unknown) {
    return payload;
  }
}

@Controller()
class RmqLedger {
  @EventPattern('order.paid', Transport.RMQ)
  @InboxHandler('ledger')
  apply(@Payload() payload: unknown) {
    return payload;
  }
}

@Controller()
class NatsLedger {
  @EventPattern('order.paid', Transport.NATS)
  @InboxHandler('nats-ledger')
  apply(@Payload() payload: unknown) {
    return payload;
  }
}

/** Inherited: Nest adds the handler for each controller. */
@Controller()
class MoreLedger extends Ledger {}

const start = (...controllers: (new () => object)[]) =>
  Test.createTestingModule({
    imports: [DiscoveryModule],
    controllers,
    providers: [InboxHandlerCheck],
  })
    // The interceptor's own dependencies are the messaging module's: not what this checks.
    .overrideInterceptor(InboxInterceptor)
    .useValue({})
    .compile();

describe('InboxHandlerCheck', () => {
  it('runs in every app that imports IdempotencyMessagingModule', () => {
    expect(Reflect.getMetadata('providers', IdempotencyMessagingModule)).toContain(
      InboxHandlerCheck,
    );
  });

  it.each([
    ['two event handlers of one pattern', [Ledger, Notifier], 'Ledger.apply', 'Notifier.apply'],
    ['two message handlers of one object pattern', [Requests], 'Requests.first', 'Requests.second'],
    [
      'two NATS handlers with a RabbitMQ one between them',
      [NatsNotifier, RmqLedger, NatsLedger],
      'NatsNotifier.apply',
      'NatsLedger.apply',
    ],
    [
      'a handler of any transport and one of RabbitMQ',
      [Notifier, RmqLedger],
      'Notifier.apply',
      'RmqLedger.apply',
    ],
  ])('refuses to start with %s, naming both', async (_, controllers, one, other) => {
    await expect(start(...controllers)).rejects.toThrow(
      new RegExp(`@InboxHandler\\(\\) on ${one} \\('[\\w-]+'\\) and on ${other} `),
    );
  });

  it('refuses one handler inherited by a second controller: Nest runs it once for each', async () => {
    await expect(start(Ledger, MoreLedger)).rejects.toThrow(
      /@InboxHandler\(\) on Ledger\.apply .*and on MoreLedger\.apply /,
    );
  });

  it('refuses one controller declared by two modules: Nest runs its handler once for each', async () => {
    @Module({ controllers: [Ledger] })
    class LedgerA {}
    @Module({ controllers: [Ledger] })
    class LedgerB {}
    const started = Test.createTestingModule({
      imports: [DiscoveryModule, LedgerA, LedgerB],
      providers: [InboxHandlerCheck],
    })
      .overrideInterceptor(InboxInterceptor)
      .useValue({})
      .compile();
    await expect(started).rejects.toThrow(
      /@InboxHandler\(\) on Ledger\.apply in LedgerA .*and on Ledger\.apply in LedgerB /,
    );
  });

  it.each([
    ['handlers of two patterns', [Ledger, Refunds]],
    ['handlers of one pattern on two transports', [RmqLedger, NatsNotifier]],
  ])('lets %s start', async (_, controllers) => {
    const moduleRef = await start(...controllers);
    expect(moduleRef.get(InboxHandlerCheck)).toBeInstanceOf(InboxHandlerCheck);
    await moduleRef.close();
  });
});
