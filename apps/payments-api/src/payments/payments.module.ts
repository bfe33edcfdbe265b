import { Module } from '@nestjs/common';
import { DemoFaults } from '../faults/demo-faults';
import { PaymentsController } from './payments.controller';
import { PaymentsService } from './payments.service';
import { ProviderClient } from './provider.client';

@Module({
  controllers: [PaymentsController],
  providers: [PaymentsService, ProviderClient, DemoFaults],
})
export class PaymentsModule {}
