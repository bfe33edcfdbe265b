import { hash } from 'node:crypto';
import { IdempotencyRejection } from './idempotency.errors';
import { assertBodyParsed, uploadedFileDigests } from './request-body';

const file = (field: string, name: string, bytes: string) => ({
  fieldname: field,
  originalname: name,
  mimetype: 'text/plain',
  size: bytes.length,
  buffer: Buffer.from(bytes),
});

const base = { method: 'POST', headers: {} };

describe('uploadedFileDigests', () => {
  it('is undefined without files, so such requests keep their fingerprint', () => {
    expect(uploadedFileDigests(base)).toBeUndefined();
    expect(uploadedFileDigests({ ...base, files: [] })).toBeUndefined();
  });

  it('digests req.file, then req.files as an array or by field in name order', () => {
    const digests = uploadedFileDigests({
      ...base,
      file: file('main', 'm.txt', 'm'),
      files: { zeta: [file('zeta', 'z.txt', 'z')], alpha: [file('alpha', 'a.txt', 'a')] },
    });
    expect(digests?.map((each) => each.field)).toEqual(['main', 'alpha', 'zeta']);
    expect(digests?.[0]).toEqual({
      field: 'main',
      name: 'm.txt',
      type: 'text/plain',
      size: 1,
      sha256: hash('sha256', 'm', 'hex'),
    });
  });

  it('refuses a file whose bytes are on disk', () => {
    const onDisk = { fieldname: 'file', originalname: 'a.txt', size: 3, path: '/tmp/x' };
    expect(() => uploadedFileDigests({ ...base, file: onDisk })).toThrow(IdempotencyRejection);
    const tempFile = { name: 'a.txt', data: Buffer.alloc(0), tempFilePath: '/tmp/y', size: 3 };
    expect(() => uploadedFileDigests({ ...base, files: { doc: tempFile } })).toThrow(
      IdempotencyRejection,
    );
  });

  it("ignores what is no file, such as @fastify/multipart's request methods", () => {
    const methods = { ...base, file: () => undefined, files: () => undefined };
    expect(uploadedFileDigests(methods)).toBeUndefined();
  });

  it("digests express-fileupload's files, one or several per field", () => {
    const upload = (name: string, bytes: string) => ({
      name,
      mimetype: 'text/plain',
      data: Buffer.from(bytes),
      size: bytes.length,
    });
    const digests = uploadedFileDigests({
      ...base,
      files: { one: upload('a.txt', 'a'), many: [upload('b.txt', 'b'), upload('c.txt', 'c')] },
    });
    expect(digests?.map((each) => [each.field, each.name, each.sha256])).toEqual([
      ['many', 'b.txt', hash('sha256', 'b', 'hex')],
      ['many', 'c.txt', hash('sha256', 'c', 'hex')],
      ['one', 'a.txt', hash('sha256', 'a', 'hex')],
    ]);
  });
});

describe('assertBodyParsed', () => {
  it('takes a parsed body, and a request without one on the wire', () => {
    expect(() => assertBodyParsed({ ...base, body: {} })).not.toThrow();
    expect(() => assertBodyParsed({ ...base, headers: { 'content-length': '0' } })).not.toThrow();
    expect(() => assertBodyParsed(base)).not.toThrow();
  });

  it('refuses a body on the wire that nothing parsed', () => {
    for (const headers of [{ 'content-length': '12' }, { 'transfer-encoding': 'chunked' }]) {
      expect(() => assertBodyParsed({ ...base, headers })).toThrow(IdempotencyRejection);
      expect(() => assertBodyParsed({ ...base, headers, body: null })).toThrow(
        IdempotencyRejection,
      );
    }
    // Chunked, all of it received, some of it unread.
    const unread = { ...base, headers: { 'transfer-encoding': 'chunked' }, complete: true };
    expect(() => assertBodyParsed({ ...unread, readableLength: 5 })).toThrow(IdempotencyRejection);
  });

  it('takes an empty chunked body, received whole and nothing left to read', () => {
    const empty = { ...base, headers: { 'transfer-encoding': 'chunked' }, complete: true };
    expect(() => assertBodyParsed({ ...empty, readableLength: 0 })).not.toThrow();
  });
});
