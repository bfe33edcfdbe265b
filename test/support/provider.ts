/** A charge as the provider stub lists it at GET /charges. */
export interface ProviderCharge {
  id: string;
  amountCents: number;
  currency: string;
  reference: string;
  status: string;
  idempotencyKey: string;
}

/** What the card processor recorded: the side effect the payment tests count. */
export async function providerCharges(
  providerUrl: string,
  reference: string,
): Promise<ProviderCharge[]> {
  const response = await fetch(`${providerUrl}/charges`);
  if (response.status !== 200) throw new Error(`GET /charges answered ${response.status}`);
  const charges = (await response.json()) as ProviderCharge[];
  return charges.filter((charge) => charge.reference === reference);
}
