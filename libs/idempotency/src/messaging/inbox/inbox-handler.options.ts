// What `@InboxHandler()` records on a handler and the inbox interceptor reads back: a file of
// its own, so the decorator (which attaches the interceptor) and the interceptor need not
// import each other.

export interface InboxHandlerOptions {
  /** Overrides the module's `inbox.maxAttempts` for this handler. */
  maxAttempts?: number;
}

export interface InboxHandlerMetadata extends InboxHandlerOptions {
  consumer: string;
}
