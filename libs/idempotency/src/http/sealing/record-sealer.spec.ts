import { randomBytes } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { resolveOptions } from '../idempotency.defaults';
import { IdempotencyProblemType, IdempotencyRejection } from '../idempotency.errors';
import type { IdempotencyEncryptionOptions, StoredResponse } from '../idempotency.options';
import { RecordSealer } from './record-sealer';
import { isSealed } from './sealed-response';

const k1 = { id: 'k1', key: randomBytes(32) };
const k2 = { id: 'k2', key: randomBytes(32) };
const id = { tenantId: 'acme', scope: 'POST /v1/orders', key: 'key-1' };
const response: StoredResponse = {
  statusCode: 201,
  headers: {
    'content-type': 'application/json',
    location: '/v1/orders/ord-9',
    'set-cookie': ['a=1', 'b=2'],
  },
  body: Buffer.from('{"id":"ord-9","customerId":"cust-42"}'),
};

const sealer = (encryption?: IdempotencyEncryptionOptions) =>
  new RecordSealer(resolveOptions({ encryption }));

function rejectionOf(open: () => unknown): IdempotencyRejection {
  try {
    open();
  } catch (error) {
    if (error instanceof IdempotencyRejection) return error;
    throw error;
  }
  throw new Error('opened');
}

describe('RecordSealer', () => {
  let errors: jest.SpyInstance;
  beforeEach(() => {
    errors = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
  });
  afterEach(() => errors.mockRestore());

  it('passes everything through without keys: the row format of a plain row is unchanged', () => {
    const plain = sealer();
    expect(plain.sealResponse(id, response)).toBe(response);
    expect(plain.sealStep(id, 'charge', '{"a":1}')).toEqual({ text: '{"a":1}', sealedWith: null });
    expect(plain.openResponse(id, response)).toBe(response);
    expect(plain.openStep(id, 'charge', '{"a":1}')).toBe('{"a":1}');
  });

  it('seals headers and body together, keeps the status plain, and opens them byte for byte', () => {
    const sealed = sealer({ keys: [k1] }).sealResponse(id, response);
    if (!isSealed(sealed)) throw new Error('not sealed');
    expect(sealed.statusCode).toBe(201);
    expect(sealed.sealedWith).toBe('k1');
    expect(sealed.envelope.includes(Buffer.from('cust-42'))).toBe(false);
    expect(sealed.envelope.includes(Buffer.from('/v1/orders/ord-9'))).toBe(false);
    expect(sealer({ keys: [k2, k1] }).openResponse(id, sealed)).toEqual(response);
  });

  it('binds a record to its key and its kind: another key, or a step, does not open it', () => {
    const sealed = sealer({ keys: [k1] }).sealResponse(id, response);
    const other = { ...id, key: 'key-2' };
    const rejection = rejectionOf(() => sealer({ keys: [k1] }).openResponse(other, sealed));
    expect(rejection.status).toBe(500);
    expect(rejection.problem.type).toBe(IdempotencyProblemType.sealedRecordUnreadable);
    expect(rejection.reason).toBe('unreadable_record');
    expect(rejection.unreadableReason).toBe('authentication_failed');
    const step = sealer({ keys: [k1] }).sealStep(id, 'created', '{"id":1}');
    expect(
      rejectionOf(() => sealer({ keys: [k1] }).openStep(id, 'charged', step.text)).unreadableReason,
    ).toBe('authentication_failed');
    expect(sealer({ keys: [k1] }).openStep(id, 'created', step.text)).toBe('{"id":1}');
  });

  it('fails closed on a retired key or with encryption off, logging scope, key hash and key id', () => {
    const sealed = sealer({ keys: [k1] }).sealResponse(id, response);
    expect(
      rejectionOf(() => sealer({ keys: [k2] }).openResponse(id, sealed)).unreadableReason,
    ).toBe('unknown_key');
    expect(rejectionOf(() => sealer().openResponse(id, sealed)).unreadableReason).toBe(
      'unknown_key',
    );
    const [line] = errors.mock.calls[0] as [string];
    expect(line).toMatch(
      /^POST \/v1\/orders: the response of key [0-9a-f]{12} cannot be opened \(unknown_key, key id k1\)/,
    );
    expect(line).not.toContain('key-1');
  });

  it("replays plain rows by default, refuses them with unsealedRows: 'refuse'", () => {
    expect(sealer({ keys: [k1] }).openResponse(id, response)).toBe(response);
    expect(sealer({ keys: [k1] }).openStep(id, 'charge', '{"a":1}')).toBe('{"a":1}');
    const strict = sealer({ keys: [k1], unsealedRows: 'refuse' });
    expect(rejectionOf(() => strict.openResponse(id, response)).unreadableReason).toBe(
      'unsealed_refused',
    );
    expect(rejectionOf(() => strict.openStep(id, 'charge', '{"a":1}')).unreadableReason).toBe(
      'unsealed_refused',
    );
  });

  it('measures sealing and opening an order response, headers included', () => {
    const s = sealer({ keys: [k1] });
    const rounds = 20_000;
    for (let i = 0; i < 1000; i++) s.openResponse(id, s.sealResponse(id, response));
    let sealed = s.sealResponse(id, response);
    const sealStart = performance.now();
    for (let i = 0; i < rounds; i++) sealed = s.sealResponse(id, response);
    const sealUs = ((performance.now() - sealStart) * 1000) / rounds;
    const openStart = performance.now();
    for (let i = 0; i < rounds; i++) s.openResponse(id, sealed);
    const openUs = ((performance.now() - openStart) * 1000) / rounds;
    process.stdout.write(
      `record sealer (response with headers): seal ${sealUs.toFixed(2)} µs, open ${openUs.toFixed(2)} µs\n`,
    );
    expect(s.openResponse(id, sealed)).toEqual(response);
  });
});
