/** An error as one line for logs and stored failure texts: its name and message. */
export function errorText(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
