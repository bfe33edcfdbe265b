import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEmbeddedPostgres } from '#tools/embedded-postgres';

describe('startEmbeddedPostgres options', () => {
  it.each([0, -1, 1.5, Number.NaN])(
    'refuses maxConnections %p before it creates or starts anything',
    async (maxConnections) => {
      const dataDir = join(tmpdir(), `embedded-options-${process.pid}-${String(maxConnections)}`);
      await expect(
        startEmbeddedPostgres({
          dataDir,
          port: 54_000,
          database: 'never',
          log: () => undefined,
          maxConnections,
        }),
      ).rejects.toThrow(`Invalid maxConnections ${maxConnections}`);
      expect(existsSync(dataDir)).toBe(false);
    },
  );
});
