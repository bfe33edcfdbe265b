import { Field, ID, Int, ObjectType } from '@nestjs/graphql';

/** The order as the GraphQL API shows it. */
@ObjectType('Order')
export class OrderModel {
  @Field(() => ID)
  id: string;

  @Field(() => String)
  customerId: string;

  @Field(() => Int)
  amountCents: number;

  @Field(() => String)
  currency: string;

  @Field(() => String, { nullable: true })
  reference: string | null;

  @Field(() => String)
  status: string;
}
