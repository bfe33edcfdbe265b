/** What the bare routes answer: an order-sized JSON body, the same on every request. */
export const BARE_ANSWER = {
  id: '00000000-0000-4000-8000-000000000000',
  customerId: 'cus-bench',
  amountCents: 1250,
  currency: 'usd',
  reference: null,
  status: 'pending',
  createdAt: '2026-01-01T00:00:00.000Z',
  paidCents: 0,
};
