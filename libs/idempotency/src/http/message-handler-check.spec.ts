import { Body, Controller, Post } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { EventPattern, MessagePattern, Payload } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { IdempotencyInterceptor } from './idempotency.interceptor';
import { IdempotencyModule } from './idempotency.module';
import { Idempotent } from './idempotent.decorator';
import { MessageHandlerCheck } from './message-handler-check';

@Controller()
class PaymentEvents {
  @EventPattern('payment.captured')
  @Idempotent()
  captured(@Payload() payload: unknown) {
    return payload;
  }
}

@Controller()
class PaymentRequests {
  @MessagePattern({ cmd: 'capture' })
  @Idempotent({ ttlSeconds: 60 })
  capture(@Payload() payload: unknown) {
    return payload;
  }
}

/** A route and a message handler at once: its message path would be unprotected. */
@Controller('dual')
class Dual {
  @Post()
  @EventPattern('payment.captured')
  @Idempotent()
  captured(@Body() body: unknown) {
    return body;
  }
}

/** Inherited: the subclass serves the handler, and is named. */
@Controller()
class MorePaymentEvents extends PaymentEvents {}

/** A class-level @Idempotent() is meant for the routes; its message handler is left alone. */
@Controller('hybrid')
@Idempotent()
class Hybrid {
  @Post()
  create(@Body() body: unknown) {
    return body;
  }

  @EventPattern('hybrid.created')
  created(@Payload() payload: unknown) {
    return payload;
  }
}

const start = (controller: new () => object) =>
  Test.createTestingModule({
    imports: [DiscoveryModule],
    controllers: [controller],
    providers: [MessageHandlerCheck],
  })
    // The interceptor's own dependencies are the module's: not what this checks.
    .overrideInterceptor(IdempotencyInterceptor)
    .useValue({})
    .compile();

describe('MessageHandlerCheck', () => {
  it('runs in every app that imports IdempotencyModule', () => {
    expect(Reflect.getMetadata('providers', IdempotencyModule)).toContain(MessageHandlerCheck);
  });

  it.each([
    ['an @EventPattern handler', PaymentEvents, 'PaymentEvents.captured'],
    ['a @MessagePattern handler', PaymentRequests, 'PaymentRequests.capture'],
    ['an inherited handler', MorePaymentEvents, 'PaymentEvents.captured'],
    ['a route that also handles messages', Dual, 'Dual.captured'],
  ])('refuses to start with %s, naming it and the inbox', async (_, controller, name) => {
    const started = start(controller);
    await expect(started).rejects.toThrow(
      `@Idempotent() on ${name}, a message handler (@MessagePattern or @EventPattern)`,
    );
    await expect(start(controller)).rejects.toThrow(
      'Use @InboxHandler() from nestjs-pg-idempotency/messaging.',
    );
  });

  it('lets a class-level @Idempotent() on a controller that also handles messages start', async () => {
    const moduleRef = await start(Hybrid);
    expect(moduleRef.get(MessageHandlerCheck)).toBeInstanceOf(MessageHandlerCheck);
    await moduleRef.close();
  });
});
