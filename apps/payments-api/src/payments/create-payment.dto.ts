import { IsInt, IsUUID, Max, Min } from 'class-validator';

export class CreatePaymentDto {
  @IsUUID()
  orderId: string;

  @IsInt()
  @Min(1)
  @Max(100_000_000)
  amountCents: number;
}
