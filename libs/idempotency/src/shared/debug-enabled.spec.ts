import { ConsoleLogger, Logger, type LoggerService } from '@nestjs/common';
import { debugEnabled } from './debug-enabled';

/** Each case installs the app's logger as Nest does, then asks a fresh `Logger`. */
function askedAfter(install: () => void): boolean {
  install();
  return debugEnabled(new Logger('Idempotency'));
}

describe('debugEnabled', () => {
  afterEach(() => Logger.overrideLogger(new ConsoleLogger()));

  it("asks Nest's ConsoleLogger, by levels given as an array or to the instance", () => {
    expect(askedAfter(() => Logger.overrideLogger(new ConsoleLogger()))).toBe(true);
    expect(askedAfter(() => Logger.overrideLogger(['log', 'warn', 'error']))).toBe(false);
    expect(askedAfter(() => Logger.overrideLogger(['debug']))).toBe(true);
    expect(
      askedAfter(() => Logger.overrideLogger(new ConsoleLogger({ logLevels: ['warn'] }))),
    ).toBe(false);
    expect(
      askedAfter(() => Logger.overrideLogger(new ConsoleLogger({ logLevels: ['verbose'] }))),
    ).toBe(true);
  });

  it('says yes to any other logger that has debug, no to one without it or to no logger', () => {
    const quiet: LoggerService = {
      log: () => undefined,
      error: () => undefined,
      warn: () => undefined,
    };
    expect(askedAfter(() => Logger.overrideLogger({ ...quiet, debug: () => undefined }))).toBe(
      true,
    );
    expect(askedAfter(() => Logger.overrideLogger(quiet))).toBe(false);
    expect(askedAfter(() => Logger.overrideLogger(false))).toBe(false);
  });

  it('agrees with what the ConsoleLogger prints', () => {
    for (const logLevels of [['debug'], ['warn']] as const) {
      const app = new ConsoleLogger({ logLevels: [...logLevels] });
      const printed = jest.spyOn(process.stdout, 'write').mockImplementation(() => true);
      try {
        Logger.overrideLogger(app);
        const logger = new Logger('Idempotency');
        logger.debug('a line');
        expect(debugEnabled(logger)).toBe(printed.mock.calls.length > 0);
      } finally {
        printed.mockRestore();
      }
    }
  });
});
