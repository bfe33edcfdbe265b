import 'reflect-metadata';
import { Exclude, instanceToPlain } from 'class-transformer';
import type { StoredResponse } from './idempotency.options';
import { captureResponse, verbatimJsonBody } from './stored-response';

const response = {
  statusCode: 201,
  getHeader: (name: string) => (name === 'location' ? '/things/1' : undefined),
};
const bodyOf = (value: unknown, options = {}) =>
  captureResponse(value, response, ['location'], options).body.toString('utf8');

class Account {
  id = 'acc-1';
  @Exclude()
  secret = 's3cr3t';
}

describe('captureResponse', () => {
  it('serialises plain data as class-transformer would, dates and nesting included', () => {
    const value = {
      id: 'o-1',
      amount: 1250,
      paid: false,
      reference: null,
      skipped: undefined,
      createdAt: new Date('2026-12-02T10:00:00.000Z'),
      lines: [{ sku: 'a', qty: 2 }, [1, 'two', null]],
      bare: Object.assign(Object.create(null), { x: 1 }),
    };
    expect(bodyOf(value)).toBe(JSON.stringify(instanceToPlain(value)));
    expect(JSON.parse(bodyOf(value))).toEqual({
      id: 'o-1',
      amount: 1250,
      paid: false,
      reference: null,
      createdAt: '2026-12-02T10:00:00.000Z',
      lines: [{ sku: 'a', qty: 2 }, [1, 'two', null]],
      bare: { x: 1 },
    });
  });

  it('leaves out @Exclude()d fields of class instances, also inside plain objects and arrays', () => {
    expect(JSON.parse(bodyOf(new Account()))).toEqual({ id: 'acc-1' });
    expect(JSON.parse(bodyOf({ data: [new Account()] }))).toEqual({ data: [{ id: 'acc-1' }] });
  });

  it('applies @SerializeOptions() to plain data too', () => {
    expect(JSON.parse(bodyOf({ id: 'o-1', _internal: true }, { excludePrefixes: ['_'] }))).toEqual({
      id: 'o-1',
    });
  });

  it('records the status, the allowlisted headers and a JSON content type', () => {
    const stored = captureResponse({ id: 1 }, response, ['location'], {});
    expect(stored.statusCode).toBe(201);
    expect(stored.headers).toEqual({
      location: '/things/1',
      'content-type': 'application/json; charset=utf-8',
    });
  });
});

describe('verbatimJsonBody', () => {
  const stored = (contentType: string | undefined, text: string): StoredResponse => ({
    statusCode: 201,
    headers: contentType === undefined ? {} : { 'content-type': contentType },
    body: Buffer.from(text, 'utf8'),
  });

  it('gives the stored text of an application/json body', () => {
    expect(verbatimJsonBody(stored('application/json; charset=utf-8', '{"id":1}'))).toBe(
      '{"id":1}',
    );
    expect(verbatimJsonBody(stored('application/json', '[1,"two"]'))).toBe('[1,"two"]');
  });

  it('leaves to the value what the router would send otherwise', () => {
    // Another JSON type: Nest's Express adapter may replace it for an object with a statusCode.
    expect(
      verbatimJsonBody(stored('application/problem+json', '{"statusCode":409}')),
    ).toBeUndefined();
    // JSON null: the adapter sends no body for a null value.
    expect(verbatimJsonBody(stored('application/json', 'null'))).toBeUndefined();
    expect(verbatimJsonBody(stored('application/json', ''))).toBeUndefined();
    expect(verbatimJsonBody(stored('text/plain', 'hello'))).toBeUndefined();
    expect(verbatimJsonBody(stored(undefined, ''))).toBeUndefined();
  });
});
