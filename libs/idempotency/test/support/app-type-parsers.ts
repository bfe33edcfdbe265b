import { types } from 'pg';

type TypeId = Parameters<typeof types.getTypeParser>[0];

/** The oid of `text[]`, which `pg.types.builtins` does not name. */
const TEXT_ARRAY = 1009 as TypeId;

/**
 * Parsers an app may set for its own reads (`pg.types.setTypeParser` is global to the process):
 * json, jsonb, timestamps, integers, booleans and arrays kept as text, bigint as a number, bytea
 * its own way. The strings carry a prefix, so a value that went through one of them never
 * passes for what the library expects.
 */
const APP_PARSERS: ReadonlyArray<readonly [TypeId, (text: string) => unknown]> = [
  [types.builtins.JSON, (text) => `json:${text}`],
  [types.builtins.JSONB, (text) => `jsonb:${text}`],
  [types.builtins.BYTEA, (text) => `bytea:${text}`],
  [types.builtins.TIMESTAMPTZ, (text) => `timestamptz:${text}`],
  [types.builtins.INT8, (text) => Number(text)],
  [types.builtins.INT4, (text) => `int4:${text}`],
  [types.builtins.BOOL, (text) => `bool:${text}`],
  [TEXT_ARRAY, (text) => `array:${text}`],
];

/**
 * Runs `work` with the app's own parsers set (`APP_PARSERS`), and puts node-postgres's back
 * afterwards, whatever `work` did. Everything the library reads must come out the same.
 */
export async function withAppTypeParsers<T>(work: () => Promise<T>): Promise<T> {
  const defaults = APP_PARSERS.map(([oid]) => [oid, types.getTypeParser(oid)] as const);
  try {
    for (const [oid, parse] of APP_PARSERS) types.setTypeParser(oid, parse);
    return await work();
  } finally {
    for (const [oid, parse] of defaults) types.setTypeParser(oid, parse);
  }
}
