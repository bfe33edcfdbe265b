import { randomBytes } from 'node:crypto';
import { envelopeKeyId, RecordCipher, UnreadableRecordError } from './record-cipher';

const k1 = { id: 'k1', key: randomBytes(32) };
const k2 = { id: 'k2', key: randomBytes(32) };
const context = JSON.stringify(['response', 'tenant', 'POST /v1/orders', 'key-1']);
const plaintext = Buffer.from('{"id":"order-1","customerId":"cust-42"}');

function reasonOf(open: () => unknown): string | undefined {
  try {
    open();
  } catch (error) {
    if (error instanceof UnreadableRecordError) return error.reason;
    throw error;
  }
  return undefined;
}

describe('RecordCipher', () => {
  it('seals with the first key and opens what it sealed; the plaintext is not in the envelope', () => {
    const cipher = new RecordCipher([k1, k2]);
    const envelope = cipher.seal(plaintext, context);
    expect(envelopeKeyId(envelope)).toBe('k1');
    expect(envelope.includes(Buffer.from('cust-42'))).toBe(false);
    expect(cipher.open(envelope, context)).toEqual(plaintext);
  });

  it('uses a fresh IV per seal: the same plaintext never gives the same envelope', () => {
    const cipher = new RecordCipher([k1]);
    expect(cipher.seal(plaintext, context)).not.toEqual(cipher.seal(plaintext, context));
  });

  it('opens with any listed key (rotation), and names the key id it lacks otherwise', () => {
    const old = new RecordCipher([k1]).seal(plaintext, context);
    expect(new RecordCipher([k2, k1]).open(old, context)).toEqual(plaintext);
    expect(new RecordCipher([k2]).sealingKeyId).toBe('k2');
    expect(reasonOf(() => new RecordCipher([k2]).open(old, context))).toBe('unknown_key');
    expect(reasonOf(() => new RecordCipher([]).open(old, context))).toBe('unknown_key');
  });

  it('refuses the envelope under another context (tenant, scope, key or record kind)', () => {
    const cipher = new RecordCipher([k1]);
    const envelope = cipher.seal(plaintext, context);
    const other = JSON.stringify(['response', 'tenant', 'POST /v1/orders', 'key-2']);
    expect(reasonOf(() => cipher.open(envelope, other))).toBe('authentication_failed');
  });

  it('refuses other key material under the same id, a flipped bit, a header naming another key', () => {
    const envelope = new RecordCipher([k1]).seal(plaintext, context);
    const impostor = new RecordCipher([{ id: 'k1', key: randomBytes(32) }]);
    expect(reasonOf(() => impostor.open(envelope, context))).toBe('authentication_failed');
    const flipped = Buffer.from(envelope);
    flipped[flipped.length - 1] ^= 1;
    expect(reasonOf(() => new RecordCipher([k1]).open(flipped, context))).toBe(
      'authentication_failed',
    );
    // Same key material listed under two ids: the id is associated data, so a renamed header fails.
    const renamed = Buffer.from(envelope);
    renamed[3] = 'x'.charCodeAt(0); // "k1" -> "kx"
    const both = new RecordCipher([k1, { id: 'kx', key: k1.key }]);
    expect(reasonOf(() => both.open(renamed, context))).toBe('authentication_failed');
  });

  it('refuses what is not an envelope', () => {
    const cipher = new RecordCipher([k1]);
    expect(reasonOf(() => cipher.open(Buffer.from('{"plain":true}'), context))).toBe('malformed');
    expect(reasonOf(() => cipher.open(Buffer.from([1, 2, 0x6b, 0x31, 0]), context))).toBe(
      'malformed',
    );
  });

  it('measures the cost of one seal and one open of an order-sized response', () => {
    const cipher = new RecordCipher([k1]);
    const body = Buffer.from(
      JSON.stringify({
        id: 'x'.repeat(36),
        customerId: 'c'.repeat(20),
        amountCents: 1200,
        currency: 'usd',
        reference: null,
        status: 'created',
        createdAt: new Date().toISOString(),
        paidCents: 0,
      }),
    );
    const rounds = 20_000;
    for (let i = 0; i < 1000; i++) cipher.open(cipher.seal(body, context), context);
    const sealStart = performance.now();
    let envelope: Buffer = body;
    for (let i = 0; i < rounds; i++) envelope = cipher.seal(body, context);
    const sealUs = ((performance.now() - sealStart) * 1000) / rounds;
    const openStart = performance.now();
    for (let i = 0; i < rounds; i++) cipher.open(envelope, context);
    const openUs = ((performance.now() - openStart) * 1000) / rounds;
    // Reported, not asserted: timings depend on the machine.
    process.stdout.write(
      `record cipher, ${body.length}-byte body: seal ${sealUs.toFixed(2)} µs, open ${openUs.toFixed(2)} µs\n`,
    );
    expect(cipher.open(envelope, context)).toEqual(body);
  });
});
