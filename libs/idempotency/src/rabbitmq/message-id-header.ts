/** The header a producer may use instead of the `message-id` property. */
export const MESSAGE_ID_HEADER = 'x-message-id';
