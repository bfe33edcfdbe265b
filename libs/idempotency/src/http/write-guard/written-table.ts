/** What a statement writes, read from its first words; see `writtenTable`. */
export interface WrittenTable {
  write: 'insert' | 'update' | 'delete' | 'merge' | 'truncate';
  /** As PostgreSQL reads it: unquoted names folded to lower case, quotes removed. */
  table: string;
  schema?: string;
}

/** Whitespace, comments and opening parentheses before a statement's first word. */
const LEADING = /(?:\s+|--[^\n]*(?:\n|$)|\/\*[\s\S]*?\*\/|\()*/y;

/** The statements that say what they write in their first words, up to the table's name. */
const VERB =
  /(insert\s+into|update(?:\s+only)?|delete\s+from(?:\s+only)?|merge\s+into(?:\s+only)?|truncate(?:\s+table)?(?:\s+only)?)\s+/iy;

const NAME_PART = String.raw`(?:"(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_$]*)`;
const NAME = new RegExp(String.raw`(${NAME_PART})(?:\s*\.\s*(${NAME_PART}))?`, 'y');

/**
 * The table a raw statement writes, when its first words say so: `INSERT INTO`, `UPDATE`,
 * `DELETE FROM`, `MERGE INTO`, `TRUNCATE`, after any comments. Anything else (a `SELECT`, a
 * `WITH` whose body may write, a `CALL`, a function that writes) is undefined: the text alone
 * does not say, and a guard that refused reads would break working code.
 */
export function writtenTable(sql: string): WrittenTable | undefined {
  LEADING.lastIndex = 0;
  LEADING.exec(sql);
  VERB.lastIndex = LEADING.lastIndex;
  const verb = VERB.exec(sql);
  if (!verb) return undefined;
  const write = verb[1].split(/\s/, 1)[0].toLowerCase() as WrittenTable['write'];
  NAME.lastIndex = VERB.lastIndex;
  const name = NAME.exec(sql);
  if (!name) return undefined;
  const [first, second] = [name[1], name[2]].map((part) => part && identifier(part));
  return second === undefined ? { write, table: first } : { write, table: second, schema: first };
}

function identifier(part: string): string {
  return part.startsWith('"') ? part.slice(1, -1).replaceAll('""', '"') : part.toLowerCase();
}
