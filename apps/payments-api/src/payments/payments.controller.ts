import { Body, Controller, Get, HttpCode, Param, ParseUUIDPipe, Post } from '@nestjs/common';
import {
  ApiCreatedResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiResponse,
} from '@nestjs/swagger';
import { Idempotent, type IdempotentPhases, Phases } from 'nestjs-pg-idempotency';
import { ApiKeyRequired } from '../auth/api-key.docs';
import { Tenant } from '../auth/tenant.decorator';
import { paymentFaults } from '../faults/demo-faults';
import { DemoFault, WithDemoFaults } from '../faults/with-demo-faults.decorator';
import { CreatePaymentDto } from './create-payment.dto';
import { PAYMENT_VIEW_SCHEMA, type PaymentView } from './payment.view';
import { problemContent } from '../problems/problem.schema';
import { PaymentsService } from './payments.service';

@Controller('v1/payments')
@ApiKeyRequired()
export class PaymentsController {
  constructor(private readonly payments: PaymentsService) {}

  /** Phased: it calls the card processor, which no database transaction can span. */
  @Post()
  @HttpCode(201)
  @WithDemoFaults('delay', 'crash-after-commit')
  @Idempotent({ phased: true })
  @ApiCreatedResponse({
    description: 'The captured payment; replays of its key answer these very bytes.',
    schema: PAYMENT_VIEW_SCHEMA,
  })
  @ApiResponse({
    status: 402,
    description: 'The card was declined (payment_declined): stored, so its replays say the same.',
    content: problemContent(402),
  })
  @ApiNotFoundResponse({
    description: 'No such order for this tenant (order_not_found): stored.',
    content: problemContent(404),
  })
  capture(
    @Tenant() tenantId: string,
    @Body() dto: CreatePaymentDto,
    @Phases() phases: IdempotentPhases,
    @DemoFault() fault?: string,
  ): Promise<PaymentView> {
    return this.payments.capture(tenantId, dto, phases, paymentFaults(fault));
  }

  @Get(':id')
  @ApiOkResponse({ description: 'The payment.', schema: PAYMENT_VIEW_SCHEMA })
  @ApiNotFoundResponse({
    description: 'No such payment for this tenant (payment_not_found).',
    content: problemContent(404),
  })
  get(
    @Tenant() tenantId: string,
    @Param('id', new ParseUUIDPipe()) id: string,
  ): Promise<PaymentView> {
    return this.payments.get(tenantId, id);
  }
}
