import { Body, Controller, Get, HttpCode, Param, ParseUUIDPipe, Post, Req } from '@nestjs/common';
import { Idempotent, type IdempotentPhases, Phases } from 'nestjs-pg-idempotency';
import { ApiKeyRequired } from '../auth/api-key.docs';
import { Tenant } from '../auth/tenant.decorator';
import { DemoFaults } from '../faults/demo-faults';
import { CreatePaymentDto } from './create-payment.dto';
import type { PaymentView } from './payment.view';
import { PaymentsService } from './payments.service';

type HttpRequest = Parameters<DemoFaults['paymentFaults']>[0];

@Controller('v1/payments')
@ApiKeyRequired()
export class PaymentsController {
  constructor(
    private readonly payments: PaymentsService,
    private readonly faults: DemoFaults,
  ) {}

  /** Phased: it calls the card processor, which no database transaction can span. */
  @Post()
  @HttpCode(201)
  @Idempotent({ phased: true })
  async capture(
    @Tenant() tenantId: string,
    @Body() dto: CreatePaymentDto,
    @Phases() phases: IdempotentPhases,
    @Req() request: HttpRequest,
  ): Promise<PaymentView> {
    await this.faults.delayIfAsked(request);
    return this.payments.capture(tenantId, dto, phases, this.faults.paymentFaults(request));
  }

  @Get(':id')
  get(@Tenant() tenantId: string, @Param('id', new ParseUUIDPipe()) id: string): Promise<PaymentView> {
    return this.payments.get(tenantId, id);
  }
}
