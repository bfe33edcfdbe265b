import { Module } from '@nestjs/common';
import { DemoFaults } from '../faults/demo-faults';
import { WriteOutsideTransactionFault } from '../faults/write-outside-transaction.fault';
import { OrdersController } from './orders.controller';
import { OrdersService } from './orders.service';

@Module({
  controllers: [OrdersController],
  providers: [OrdersService, DemoFaults, WriteOutsideTransactionFault],
  // The benchmark's baseline route runs the orders handler itself (bench/bench.module.ts).
  exports: [OrdersService, DemoFaults, WriteOutsideTransactionFault],
})
export class OrdersModule {}
