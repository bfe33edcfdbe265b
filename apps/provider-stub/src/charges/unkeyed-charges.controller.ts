import { Body, Controller, Headers, Post } from '@nestjs/common';
import { CreateChargeDto } from './create-charge.dto';
import { ChargesService } from './charges.service';

/**
 * `PROVIDER_IDEMPOTENCY=off`: a processor without idempotency keys. Every `POST /charges`
 * charges; the key is only written down, so a test can see two charges made under one key.
 */
@Controller('charges')
export class UnkeyedChargesController {
  constructor(private readonly charges: ChargesService) {}

  @Post()
  create(@Body() dto: CreateChargeDto, @Headers('idempotency-key') key?: string) {
    return this.charges.create(dto, key ?? '');
  }
}
