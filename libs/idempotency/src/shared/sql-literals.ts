/** A statement and its `$1..$n` parameters. */
export interface SqlStatement {
  text: string;
  values: readonly unknown[];
  /**
   * Names a statement sent often: it may then be prepared once per connection (SQL `PREPARE`)
   * and run as `EXECUTE`, which skips parsing and planning it again.
   */
  name?: string;
}

/** Quotes a string as an SQL literal: node-postgres's `Client#escapeLiteral`. */
export type EscapeLiteral = (value: string) => string;

/**
 * Writes a statement's parameters into its text as SQL literals. The simple query protocol
 * takes several statements in one round trip but no parameters, so a statement that rides
 * along with another (START TRANSACTION, COMMIT) must carry its values inline. Strings go
 * through the driver's own escaping (unless it would leave them as they are); byte strings as
 * hex; objects as JSON, as the driver would send them.
 */
export function inlineParameters(statement: SqlStatement, escape: EscapeLiteral): string {
  return statement.text.replace(/\$(\d+)/g, (_placeholder, position: string) => {
    const index = Number(position) - 1;
    if (index < 0 || index >= statement.values.length) {
      throw new Error(`statement has no parameter $${position}`);
    }
    return literal(statement.values[index], escape);
  });
}

/** A string escaping leaves as it is: no quote, no backslash. */
const NOTHING_TO_ESCAPE = /^[^'\\]*$/;

function literal(value: unknown, escape: EscapeLiteral): string {
  if (value === null || value === undefined) return 'NULL';
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Error(`cannot inline the number ${value}`);
    // Parenthesised when negative: `x - -1` reads fine, but `x--1` would start a comment.
    return value < 0 ? `(${value})` : String(value);
  }
  if (typeof value === 'boolean') return value ? 'TRUE' : 'FALSE';
  if (Buffer.isBuffer(value)) return `decode('${value.toString('hex')}', 'hex')`;
  if (typeof value === 'string') return quoted(value, escape);
  return quoted(JSON.stringify(value), escape);
}

/**
 * The driver's escaping copies a string character by character; where it would change nothing
 * (keys, hashes, most JSON), quotes around it are the same literal without that garbage.
 */
function quoted(text: string, escape: EscapeLiteral): string {
  return NOTHING_TO_ESCAPE.test(text) ? `'${text}'` : escape(text);
}

/** `EXECUTE` of a prepared statement, its parameters as literals. */
export function executeStatement(
  preparedName: string,
  values: readonly unknown[],
  escape: EscapeLiteral,
): string {
  return values.length === 0
    ? `EXECUTE ${preparedName}`
    : `EXECUTE ${preparedName}(${values.map((value) => literal(value, escape)).join(', ')})`;
}
