import { Body, Controller, Get, HttpCode, Param, ParseUUIDPipe, Post } from '@nestjs/common';
import { Idempotent, type IdempotentPhases, Phases } from 'nestjs-pg-idempotency';
import { ApiKeyRequired } from '../auth/api-key.docs';
import { Tenant } from '../auth/tenant.decorator';
import { paymentFaults } from '../faults/demo-faults';
import { DemoFault, WithDemoFaults } from '../faults/with-demo-faults.decorator';
import { CreatePaymentDto } from './create-payment.dto';
import type { PaymentView } from './payment.view';
import { PaymentsService } from './payments.service';

@Controller('v1/payments')
@ApiKeyRequired()
export class PaymentsController {
  constructor(private readonly payments: PaymentsService) {}

  /** Phased: it calls the card processor, which no database transaction can span. */
  @Post()
  @HttpCode(201)
  @WithDemoFaults('delay')
  @Idempotent({ phased: true })
  capture(
    @Tenant() tenantId: string,
    @Body() dto: CreatePaymentDto,
    @Phases() phases: IdempotentPhases,
    @DemoFault() fault?: string,
  ): Promise<PaymentView> {
    return this.payments.capture(tenantId, dto, phases, paymentFaults(fault));
  }

  @Get(':id')
  get(
    @Tenant() tenantId: string,
    @Param('id', new ParseUUIDPipe()) id: string,
  ): Promise<PaymentView> {
    return this.payments.get(tenantId, id);
  }
}
