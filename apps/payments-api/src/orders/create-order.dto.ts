import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsInt, IsOptional, IsString, Length, Max, Min } from 'class-validator';
import type { Currency } from './order.entity';

export class CreateOrderDto {
  @ApiProperty({ minLength: 1, maxLength: 64 })
  @IsString()
  @Length(1, 64)
  customerId: string;

  @ApiProperty({ type: 'integer', minimum: 1, maximum: 100_000_000 })
  @IsInt()
  @Min(1)
  @Max(100_000_000)
  amountCents: number;

  /** The initialiser is the default; the fingerprint sees it too, so omitting it is a replay. */
  @ApiPropertyOptional({ enum: ['usd', 'eur', 'gbp'], default: 'usd' })
  @IsOptional()
  @IsIn(['usd', 'eur', 'gbp'])
  currency: Currency = 'usd';

  @ApiPropertyOptional({
    minLength: 1,
    maxLength: 64,
    description: 'Unique per tenant: a second order with it is a 409 duplicate_reference.',
  })
  @IsOptional()
  @IsString()
  @Length(1, 64)
  reference?: string;
}
