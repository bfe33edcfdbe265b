import { Body, Controller, Headers, Post } from '@nestjs/common';
import { Idempotent } from 'nestjs-pg-idempotency';
import { CreateChargeDto } from './create-charge.dto';
import { ChargesService } from './charges.service';

/** A processor that deduplicates like a real one: with our own library. */
@Controller('charges')
export class ChargesController {
  constructor(private readonly charges: ChargesService) {}

  @Post()
  @Idempotent()
  create(@Body() dto: CreateChargeDto, @Headers('idempotency-key') key: string) {
    return this.charges.create(dto, key);
  }
}
