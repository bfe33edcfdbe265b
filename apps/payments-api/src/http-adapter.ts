import type { AbstractHttpAdapter } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';

export type HttpAdapterKind = 'express' | 'fastify';

/** Largest JSON body accepted: larger ones get 413. */
export const BODY_LIMIT_BYTES = 1024 * 1024;

/** The demo runs on either adapter (`HTTP_ADAPTER=fastify`); the library works on both. */
export function createHttpAdapter(kind: HttpAdapterKind): AbstractHttpAdapter {
  return kind === 'fastify'
    ? new FastifyAdapter({ bodyLimit: BODY_LIMIT_BYTES })
    : new ExpressAdapter();
}

export function httpAdapterKind(value: string | undefined): HttpAdapterKind {
  if (value === undefined || value === '' || value === 'express') return 'express';
  if (value === 'fastify') return 'fastify';
  throw new Error(`HTTP_ADAPTER must be express or fastify, got "${value}"`);
}
