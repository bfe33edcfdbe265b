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
    }
  });
});
