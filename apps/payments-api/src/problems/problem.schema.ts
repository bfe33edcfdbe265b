import { PROBLEM_CONTENT_TYPE } from 'nestjs-pg-idempotency';

/** OpenAPI content of an RFC 9457 problem answer, for `@ApiResponse()`. */
export function problemContent(status: number) {
  return {
    [PROBLEM_CONTENT_TYPE]: {
      schema: {
        type: 'object',
        required: ['type', 'title', 'status'],
        properties: {
          type: { type: 'string' },
          title: { type: 'string' },
          status: { type: 'integer', enum: [status] },
          detail: { type: 'string' },
        },
      },
    },
  };
}
