import { type Type, VERSION_NEUTRAL, VersioningType } from '@nestjs/common';
import type { ApplicationConfig } from '@nestjs/core';
import { PerAppRoute } from './per-app-route';

// Nest's metadata keys (the same in Nest 11 and 12; not exported from either root).
const HOST_METADATA = 'host';
const VERSION_METADATA = '__version__';

type Handler = (...args: never[]) => unknown;
type VersionValue = string | symbol | readonly (string | symbol)[];

const decided = new PerAppRoute<string>();
/** The key of an app without its `ApplicationConfig` (a hand-built interceptor). */
const NO_CONFIG = {};

/**
 * What tells this route's handler from others on the same method and path: the controller's
 * `host` and, unless the version is in the path (URI versioning), the handler's version. Nest
 * routes `POST /orders` of `@Version('1')` and of `@Version('2')` (header, media type or custom
 * versioning), or of two controllers on two hosts, to different handlers. They share the scope
 * `<METHOD> <path>`, which names a key space and must not move under keys already claimed, so
 * this goes into the fingerprint: the same key sent to the other handler is another request (a
 * 422), never the first handler's response. Empty for every other route, whose fingerprint
 * stays as it was. Decided once per app and handler.
 */
export function routeVariant(
  config: ApplicationConfig | undefined,
  controller: Type<unknown>,
  handler: Handler,
): string {
  const app = config ?? NO_CONFIG;
  return decided.resolve(app, controller, handler, () => describe(config, controller, handler));
}

function describe(
  config: ApplicationConfig | undefined,
  controller: Type<unknown>,
  handler: Handler,
): string {
  const parts: string[] = [];
  const host = Reflect.getMetadata(HOST_METADATA, controller) as
    string | RegExp | (string | RegExp)[] | undefined;
  if (host !== undefined) parts.push(`host ${[host].flat().map(String).join('|')}`);
  const versioning = config?.getVersioning();
  if (versioning && versioning.type !== VersioningType.URI) {
    const version =
      (Reflect.getMetadata(VERSION_METADATA, handler) as VersionValue | undefined) ??
      (Reflect.getMetadata(VERSION_METADATA, controller) as VersionValue | undefined) ??
      versioning.defaultVersion;
    if (version !== undefined) parts.push(`version ${versionText(version)}`);
  }
  return parts.length > 0 ? ` (${parts.join(', ')})` : '';
}

function versionText(version: VersionValue): string {
  return [version]
    .flat()
    .map((each) => (each === VERSION_NEUTRAL ? 'neutral' : String(each)))
    .join('|');
}
