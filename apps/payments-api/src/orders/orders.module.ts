import { Module } from '@nestjs/common';
import { DemoFaults } from '../faults/demo-faults';
import { WriteOutsideTransactionFault } from '../faults/write-outside-transaction.fault';
import { OrdersController } from './orders.controller';
import { OrdersResolver } from './orders.resolver';
import { OrdersService } from './orders.service';

@Module({
  controllers: [OrdersController],
  // The resolver serves only where the app mounts GraphQL (app.module.ts); elsewhere it is idle.
  providers: [OrdersService, OrdersResolver, DemoFaults, WriteOutsideTransactionFault],
  // The benchmark's baseline route runs the orders handler itself (bench/bench.module.ts).
  exports: [OrdersService, DemoFaults, WriteOutsideTransactionFault],
})
export class OrdersModule {}
