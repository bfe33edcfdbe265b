import { IsIn, IsInt, IsString, Length, Max, Min } from 'class-validator';

export class CreateChargeDto {
  @IsInt()
  @Min(1)
  @Max(100_000_000)
  amountCents: number;

  @IsIn(['usd', 'eur', 'gbp'])
  currency: string;

  @IsString()
  @Length(1, 128)
  reference: string;
}
