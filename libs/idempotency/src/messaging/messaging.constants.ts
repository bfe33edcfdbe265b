/** Injection token of the messaging options with every default filled in. */
export const MESSAGING_OPTIONS = Symbol('idempotency:messaging-options');

/** Metadata key under which `@InboxHandler()` keeps a handler's options. */
export const INBOX_HANDLER = Symbol('idempotency:inbox-handler');
