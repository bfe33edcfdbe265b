import {
  DROPPED_HEADERS_HEADER,
  encodableCopyHeaders,
  encodableShortStrings,
  unencodableHeaders,
} from './amqp-headers';

describe('unencodableHeaders', () => {
  it('passes what amqplib encodes', () => {
    expect(unencodableHeaders({ tenant: 'acme', attempts: 3, ok: true, big: 2 ** 60 })).toBe(
      undefined,
    );
    expect(unencodableHeaders({ trace: 'x'.repeat(65_000) })).toBe(undefined);
  });

  it('names what it would fail on, or truncate', () => {
    expect(unencodableHeaders({ balance: -1e19 })).toEqual(expect.any(String));
    expect(unencodableHeaders({ trace: 'x'.repeat(65_530) })).toMatch(/bytes of headers, over/);
    expect(unencodableHeaders({ ['n'.repeat(256)]: 1 })).toEqual(expect.any(String));
  });
});

describe('encodableCopyHeaders', () => {
  const ours = { 'x-inbox-reason': 'unprocessable' };

  it('keeps encodable headers as they are, and adds nothing else', () => {
    expect(encodableCopyHeaders({ tenant: 'acme' }, ours)).toEqual({ tenant: 'acme', ...ours });
  });

  it('sends a number it cannot encode as an integer as a double', () => {
    expect(encodableCopyHeaders({ balance: -1e19, tenant: 'acme' }, ours)).toEqual({
      balance: { '!': 'double', value: -1e19 },
      tenant: 'acme',
      ...ours,
    });
  });

  it('leaves out a header it cannot encode at all, and names it', () => {
    expect(encodableCopyHeaders({ ['n'.repeat(256)]: 'x', tenant: 'acme' }, ours)).toEqual({
      tenant: 'acme',
      ...ours,
      [DROPPED_HEADERS_HEADER]: 'n'.repeat(256),
    });
  });

  it('leaves out every original header when together they are too large', () => {
    const original = { a: 'x'.repeat(40_000), b: 'y'.repeat(40_000) };
    expect(encodableCopyHeaders(original, ours)).toEqual({
      ...ours,
      [DROPPED_HEADERS_HEADER]: 'a,b',
    });
  });
});

describe('encodableShortStrings', () => {
  it('keeps the strings of 255 bytes or less, and names the others', () => {
    const properties = {
      messageId: 'm-1',
      type: '\uFFFD'.repeat(200), // what 200 bytes that are not UTF-8 decode to: 600 bytes
      appId: undefined,
    };
    expect(encodableShortStrings(properties, ['messageId', 'type', 'appId'])).toEqual({
      kept: { messageId: 'm-1' },
      dropped: ['type'],
    });
  });
});
