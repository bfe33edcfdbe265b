/**
 * PostgreSQL's own output, kept to explain a failed start: "did not start" alone says nothing,
 * the last lines of its log usually say why.
 */
import type { ChildProcess } from 'child_process';

const LOG_TAIL_LINES = 40;

/** Keeps PostgreSQL's last log lines, to explain a failure. */
export class LogTail {
  private readonly lines: string[] = [];

  push(chunk: string): void {
    for (const line of chunk.split(/\r?\n/)) {
      if (line.trim() === '') continue;
      this.lines.push(line);
      if (this.lines.length > LOG_TAIL_LINES) this.lines.shift();
    }
  }

  toString(): string {
    return this.lines.length ? this.lines.join('\n') : '(PostgreSQL logged nothing)';
  }
}

/** Keeps the child's output in `tail` (and its pipes drained), and its spawn errors from crashing us. */
export function follow(child: ChildProcess, tail: LogTail): void {
  child.stdout?.on('data', (chunk: Buffer) => tail.push(chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => tail.push(chunk.toString('utf8')));
  child.on('error', (error) => tail.push(describe(error)));
}

export function failure(message: string, cause: unknown, tail: LogTail): Error {
  // start() rejects with a bare `undefined` when the postmaster exits.
  const reason = cause === undefined ? 'the postgres process exited' : describe(cause);
  return new Error(`${message}: ${reason}\n--- last PostgreSQL log lines ---\n${tail.toString()}`, {
    cause,
  });
}

export function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
