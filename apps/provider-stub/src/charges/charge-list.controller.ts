import { Controller, Get, Query } from '@nestjs/common';
import { ChargesService, type ListedCharge } from './charges.service';

/**
 * What the processor recorded: `GET /charges?reference=<id>` is how a caller reconciles a call
 * whose answer it lost; without `reference`, every charge (what the tests count).
 */
@Controller('charges')
export class ChargeListController {
  constructor(private readonly charges: ChargesService) {}

  @Get()
  list(@Query('reference') reference?: string): Promise<ListedCharge[]> {
    return this.charges.list(reference);
  }
}
