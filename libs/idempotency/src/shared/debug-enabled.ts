import { ConsoleLogger, type Logger, type LoggerService } from '@nestjs/common';

/**
 * Whether a debug line given to `logger` would be printed, asked of the logger that would print
 * it: Nest's `ConsoleLogger` (the default, or a subclass) by its levels, any other logger by
 * whether it has `debug` at all; no logger (`logger: false`), no. A request's debug lines name
 * its key by a SHA-256 label, so a request skips that hash where nobody reads the line. (Nest's
 * static `Logger.isLevelEnabled` says no for a logger instance given to `useLogger`, whatever
 * its levels: it only knows levels given as an array.)
 */
export function debugEnabled(logger: Logger): boolean {
  const target = logger.localInstance as LoggerService | undefined;
  if (target instanceof ConsoleLogger) return target.isLevelEnabled('debug');
  return typeof target?.debug === 'function';
}
