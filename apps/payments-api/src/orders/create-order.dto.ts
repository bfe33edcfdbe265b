import { IsIn, IsInt, IsOptional, IsString, Length, Max, Min } from 'class-validator';
import type { Currency } from './order.entity';

export class CreateOrderDto {
  @IsString()
  @Length(1, 64)
  customerId: string;

  @IsInt()
  @Min(1)
  @Max(100_000_000)
  amountCents: number;

  /** The initialiser is the default; the fingerprint sees it too, so omitting it is a replay. */
  @IsOptional()
  @IsIn(['usd', 'eur', 'gbp'])
  currency: Currency = 'usd';

  @IsOptional()
  @IsString()
  @Length(1, 64)
  reference?: string;
}
