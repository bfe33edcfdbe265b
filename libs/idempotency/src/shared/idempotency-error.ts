/**
 * The base of every error the library throws for an app to see: `instanceof IdempotencyError`
 * tells the library's own errors from the app's and from the database's.
 */
export class IdempotencyError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}
