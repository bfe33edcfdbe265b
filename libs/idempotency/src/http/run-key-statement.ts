import type { EntityManager } from 'typeorm';
import type { SqlStatement } from '../shared/sql-literals';
import { libraryParameters } from './write-guard/library-statements';

/**
 * Sends one statement about keys on `tx` (`txHost.tx`: the current transaction, or none).
 * TypeORM keeps the bound parameters on a failed query's error; they hold the raw key, which
 * must never reach a log line, so they are redacted before the error goes on.
 */
export async function runKeyStatement<T = unknown>(
  tx: EntityManager,
  statement: SqlStatement,
): Promise<T[]> {
  try {
    return await tx.query(statement.text, libraryParameters(statement.values));
  } catch (error) {
    if (typeof error === 'object' && error !== null && 'parameters' in error) {
      (error as { parameters?: unknown }).parameters = ['[redacted]'];
    }
    throw error;
  }
}
