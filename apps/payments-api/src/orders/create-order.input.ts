import { Field, InputType, Int } from '@nestjs/graphql';
import { IsIn, IsInt, IsOptional, IsString, Length, Max, Min } from 'class-validator';
import type { Currency } from './order.entity';

/** `POST /v1/orders`'s body as a GraphQL input: the same fields, the same validation. */
@InputType()
export class CreateOrderInput {
  @Field(() => String)
  @IsString()
  @Length(1, 64)
  customerId: string;

  @Field(() => Int)
  @IsInt()
  @Min(1)
  @Max(100_000_000)
  amountCents: number;

  @Field(() => String, { nullable: true })
  @IsOptional()
  @IsIn(['usd', 'eur', 'gbp'])
  currency?: Currency;

  @Field(() => String, { nullable: true })
  @IsOptional()
  @IsString()
  @Length(1, 64)
  reference?: string;
}
