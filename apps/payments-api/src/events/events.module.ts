import { Global, Module } from '@nestjs/common';
import { OrderEvents } from './order-events';
import { PaymentEvents } from './payment-events';

/** The demo's outgoing events, injectable everywhere; they publish only when messaging is on. */
@Global()
@Module({
  providers: [OrderEvents, PaymentEvents],
  exports: [OrderEvents, PaymentEvents],
})
export class EventsModule {}
