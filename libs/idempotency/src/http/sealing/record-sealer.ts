import { Inject, Injectable, Logger } from '@nestjs/common';
import { keyLabel } from '../fingerprint';
import { IDEMPOTENCY_OPTIONS } from '../idempotency.constants';
import type { ResolvedIdempotencyOptions } from '../idempotency.defaults';
import { IdempotencyRejection } from '../idempotency.errors';
import type { StoredResponse } from '../idempotency.options';
import type { KeyId } from '../key-id';
import { RecordCipher, UnreadableRecordError } from './record-cipher';
import { isSealed, type RecordedResponse } from './sealed-response';

/**
 * A sealed step result in `step_state`: the prefix, then the envelope in base64. A plain result
 * is JSON text, and no JSON text starts with a letter `s`.
 */
const SEALED_STEP_PREFIX = 'sealed:';

/** A step result as it goes into `step_state`, and the key that sealed it (null: plain). */
export interface RecordedStep {
  text: string;
  sealedWith: string | null;
}

/**
 * Seals what a key row keeps of a response and of each phased step (option `encryption`), in
 * JS before the statement that writes it, and opens it when a row is read. Without keys it
 * passes everything through, and still recognises a sealed row it cannot open.
 *
 * Each record is bound to its row by the associated data: tenant, scope, key and what it is
 * (the response, or which step). A record copied under another key fails its tag.
 *
 * A record no listed key opens fails closed: the request is answered with a 500 problem
 * (`sealedRecordUnreadable`), never by running the handler again, since the row says it ran.
 */
@Injectable()
export class RecordSealer {
  private readonly logger = new Logger('Idempotency');
  private readonly cipher: RecordCipher;

  constructor(@Inject(IDEMPOTENCY_OPTIONS) private readonly options: ResolvedIdempotencyOptions) {
    this.cipher = new RecordCipher(options.encryption.keys);
  }

  sealResponse(id: KeyId, response: StoredResponse): RecordedResponse {
    const sealedWith = this.cipher.sealingKeyId;
    if (sealedWith === undefined) return response;
    const headers = Buffer.from(JSON.stringify(response.headers), 'utf8');
    const length = Buffer.alloc(4);
    length.writeUInt32BE(headers.length);
    return {
      statusCode: response.statusCode,
      sealedWith,
      envelope: this.cipher.seal(
        Buffer.concat([length, headers, response.body]),
        responseContext(id, response.statusCode),
      ),
    };
  }

  /** The plain response of a row; throws the 500 rejection when it cannot be opened. */
  openResponse(id: KeyId, recorded: RecordedResponse): StoredResponse {
    if (!isSealed(recorded)) {
      if (this.refusesUnsealed)
        this.unreadable(
          id,
          'the response',
          new UnreadableRecordError('unsealed_refused', undefined),
        );
      return recorded;
    }
    let plaintext: Buffer;
    try {
      plaintext = this.cipher.open(recorded.envelope, responseContext(id, recorded.statusCode));
    } catch (error) {
      this.unreadable(id, 'the response', error);
    }
    const headersEnd = 4 + plaintext.readUInt32BE(0);
    return {
      statusCode: recorded.statusCode,
      headers: JSON.parse(plaintext.toString('utf8', 4, headersEnd)) as StoredResponse['headers'],
      body: plaintext.subarray(headersEnd),
    };
  }

  /** `json`: the step's result as JSON text. */
  sealStep(id: KeyId, step: string, json: string): RecordedStep {
    const sealedWith = this.cipher.sealingKeyId;
    if (sealedWith === undefined) return { text: json, sealedWith: null };
    const envelope = this.cipher.seal(Buffer.from(json, 'utf8'), stepContext(id, step));
    return { text: SEALED_STEP_PREFIX + envelope.toString('base64'), sealedWith };
  }

  /** The step's result as JSON text; throws the 500 rejection when it cannot be opened. */
  openStep(id: KeyId, step: string, text: string): string {
    if (!text.startsWith(SEALED_STEP_PREFIX)) {
      if (this.refusesUnsealed)
        this.unreadable(
          id,
          `step ${step}`,
          new UnreadableRecordError('unsealed_refused', undefined),
        );
      return text;
    }
    const envelope = Buffer.from(text.slice(SEALED_STEP_PREFIX.length), 'base64');
    try {
      return this.cipher.open(envelope, stepContext(id, step)).toString('utf8');
    } catch (error) {
      this.unreadable(id, `step ${step}`, error);
    }
  }

  private get refusesUnsealed(): boolean {
    return this.options.encryption.unsealedRows === 'refuse';
  }

  /** Says which record of which key could not be opened, and why; then fails the request. */
  private unreadable(id: KeyId, record: string, error: unknown): never {
    if (!(error instanceof UnreadableRecordError)) throw error;
    this.logger.error(
      `${id.scope}: ${record} of key ${keyLabel(id.tenantId, id.scope, id.key)} cannot be opened ` +
        `(${error.reason}, key id ${error.keyId ?? '-'}); answered 500, the handler not run again`,
    );
    throw IdempotencyRejection.sealedRecordUnreadable(error.reason);
  }
}

// The associated data: JSON arrays, so no tenant, scope or key can pass for another's. The
// status code stays a plain column (the row's state reads it), so it is bound in here: a 422
// edited into a 201 does not open.
function responseContext(id: KeyId, statusCode: number): string {
  return JSON.stringify(['response', id.tenantId, id.scope, id.key, statusCode]);
}

function stepContext(id: KeyId, step: string): string {
  return JSON.stringify(['step', id.tenantId, id.scope, id.key, step]);
}
