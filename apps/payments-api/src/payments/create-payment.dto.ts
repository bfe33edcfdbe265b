import { ApiProperty } from '@nestjs/swagger';
import { IsInt, IsUUID, Max, Min } from 'class-validator';

export class CreatePaymentDto {
  @ApiProperty({ format: 'uuid', description: "One of the tenant's orders." })
  @IsUUID()
  orderId: string;

  @ApiProperty({ type: 'integer', minimum: 1, maximum: 100_000_000 })
  @IsInt()
  @Min(1)
  @Max(100_000_000)
  amountCents: number;
}
