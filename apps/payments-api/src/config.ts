import type { LogLevel } from '@nestjs/common';
import type { WriteGuardMode } from 'nestjs-pg-idempotency';
import type { AppConfig } from './app.config';
import { httpAdapterKind } from './http-adapter';
import { messagingOverridesFromEnv } from './messaging/messaging.config';

/** The demo's environment, with its defaults. `providerUrl` is resolved by main.ts. */
export function configFromEnv(
  env: NodeJS.ProcessEnv,
  databaseUrl: string,
  providerUrl: string,
): AppConfig {
  return {
    databaseUrl,
    demoFaults: env.DEMO_FAULTS === '1',
    amqpUrl: env.AMQP_URL || undefined,
    messaging: messagingOverridesFromEnv(env),
    providerUrl,
    providerTimeoutMs: positiveInteger(env, 'PROVIDER_TIMEOUT_MS', 5000),
    leaseSeconds: positiveInteger(env, 'IDEMPOTENCY_LEASE_SECONDS', 60),
    cleanup: onOff(env, 'IDEMPOTENCY_CLEANUP', true)
      ? {
          intervalSeconds: positiveInteger(env, 'IDEMPOTENCY_CLEANUP_INTERVAL_SECONDS', 300),
          batchSize: positiveInteger(env, 'IDEMPOTENCY_CLEANUP_BATCH_SIZE', 1000),
        }
      : false,
    preparedStatements: onOff(env, 'IDEMPOTENCY_PREPARED_STATEMENTS', true),
    maxResponseBytes: env.IDEMPOTENCY_MAX_RESPONSE_BYTES
      ? positiveInteger(env, 'IDEMPOTENCY_MAX_RESPONSE_BYTES', 1)
      : undefined,
    encryptionKeys: encryptionKeysFromEnv(env),
    writeGuard: writeGuardFromEnv(env),
    replayCache: onOff(env, 'IDEMPOTENCY_REPLAY_CACHE', true),
    benchRoutes: env.BENCH_ROUTES === '1',
    benchRedisUrl: env.BENCH_REDIS_URL || undefined,
    graphql: httpAdapterKind(env.HTTP_ADAPTER) === 'express',
  };
}

/**
 * `IDEMPOTENCY_ENCRYPTION_KEYS=<id>:<base64 of 32 bytes>[,<id>:<base64>...]`: the first key
 * seals, every listed key opens. Unset or empty: stored responses stay plain. A malformed value
 * stops the start; the messages name the entry, never its key material.
 */
export function encryptionKeysFromEnv(
  env: NodeJS.ProcessEnv,
): { id: string; key: Buffer }[] | undefined {
  const raw = env.IDEMPOTENCY_ENCRYPTION_KEYS?.trim();
  if (!raw) return undefined;
  const name = 'IDEMPOTENCY_ENCRYPTION_KEYS';
  const ids = new Set<string>();
  return raw.split(',').map((entry, index) => {
    const position = `entry ${index + 1}`;
    const separator = entry.indexOf(':');
    const id = entry.slice(0, Math.max(separator, 0)).trim();
    const base64 = entry.slice(separator + 1).trim();
    if (separator < 0 || id === '' || base64 === '')
      throw new Error(`${name}: ${position} must be <id>:<base64 of 32 bytes>`);
    if (ids.has(id)) throw new Error(`${name}: the id "${id}" is listed twice`);
    ids.add(id);
    const key = Buffer.from(base64, 'base64');
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(base64) || key.length !== 32)
      throw new Error(
        `${name}: the key of "${id}" must be 32 bytes in base64 (openssl rand -base64 32), got ${key.length} bytes`,
      );
    return { id, key };
  });
}

/** `IDEMPOTENCY_WRITE_GUARD`: `throw`, `warn` or `off`; unset keeps the library's default. */
function writeGuardFromEnv(env: NodeJS.ProcessEnv): WriteGuardMode | undefined {
  const raw = env.IDEMPOTENCY_WRITE_GUARD;
  if (raw === undefined || raw === '') return undefined;
  if (raw === 'throw' || raw === 'warn' || raw === 'off') return raw;
  throw new Error(`IDEMPOTENCY_WRITE_GUARD must be "throw", "warn" or "off", got "${raw}"`);
}

/** `on` or `off`; unset or empty keeps `fallback`. Anything else stops the start. */
export function onOff(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw === 'on' || raw === 'off') return raw === 'on';
  throw new Error(`${name} must be "on" or "off", got "${raw}"`);
}

export function positiveInteger(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value <= 0)
    throw new Error(`${name} must be a positive integer, got "${raw}"`);
  return value;
}

const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'log', 'debug', 'verbose'];

/**
 * `LOG_LEVEL` and every level above it (`log` when unset). `debug` shows each key's outcome,
 * one line per request (keys as short hashes): worth having while reading the demo, a cost
 * under load.
 */
export function logLevelsFromEnv(env: NodeJS.ProcessEnv): LogLevel[] {
  const level = (env.LOG_LEVEL || 'log') as LogLevel;
  const index = LOG_LEVELS.indexOf(level);
  if (index < 0)
    throw new Error(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${env.LOG_LEVEL}"`);
  return LOG_LEVELS.slice(0, index + 1);
}
