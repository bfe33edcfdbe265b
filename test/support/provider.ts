/** A charge as the provider stub lists it at GET /charges. */
export interface ProviderCharge {
  id: string;
  amountCents: number;
  currency: string;
  reference: string;
  status: string;
  idempotencyKey: string;
}

/** What the card processor recorded for `reference`: the side effect the payment tests count. */
export async function providerCharges(
  providerUrl: string,
  reference: string,
): Promise<ProviderCharge[]> {
  const url = new URL(`${providerUrl}/charges`);
  url.searchParams.set('reference', reference);
  const response = await fetch(url);
  if (response.status !== 200) throw new Error(`GET /charges answered ${response.status}`);
  return (await response.json()) as ProviderCharge[];
}
