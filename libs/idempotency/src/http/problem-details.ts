import { STATUS_CODES } from 'node:http';
import type { HttpException } from '@nestjs/common';
import type { RenderedException } from './idempotency.options';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** RFC 9457 problem details; extension members sit beside the standard ones. */
export interface ProblemDetails {
  type: string;
  title: string;
  status: number;
  detail?: string;
  instance?: string;
  [extension: string]: unknown;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Turns any HttpException into problem details. A response that already is a problem
 * (has a string `type`) is kept; Nest's own `{ statusCode, message, error }` shape is
 * translated, with validation messages under `errors`.
 */
export function problemFromException(exception: HttpException): ProblemDetails {
  const status = exception.getStatus();
  const reason = STATUS_CODES[status] ?? 'Error';
  const response = exception.getResponse();
  if (isRecord(response) && typeof response.type === 'string') {
    return {
      ...response,
      type: response.type,
      title: typeof response.title === 'string' ? response.title : reason,
      status,
    };
  }
  if (isRecord(response)) {
    const { message, error, statusCode: _statusCode, ...extensions } = response;
    const problem: ProblemDetails = {
      type: 'about:blank',
      title: typeof error === 'string' ? error : reason,
      status,
      ...extensions,
    };
    if (Array.isArray(message)) {
      problem.detail = 'The request is invalid.';
      problem.errors = message;
    } else if (typeof message === 'string' && message !== problem.title) {
      problem.detail = message;
    }
    return problem;
  }
  const detail = Array.isArray(response)
    ? response.join(',')
    : typeof response === 'string'
      ? response
      : JSON.stringify(response);
  return detail && detail !== reason
    ? { type: 'about:blank', title: reason, status, detail }
    : { type: 'about:blank', title: reason, status };
}

/** The default `renderException`: problem+json bytes for a stored failure. */
export function renderProblem(exception: HttpException): RenderedException {
  return {
    contentType: PROBLEM_CONTENT_TYPE,
    body: JSON.stringify(problemFromException(exception)),
  };
}
