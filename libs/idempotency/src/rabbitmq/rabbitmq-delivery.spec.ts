import type { Channel, ConsumeMessage } from 'amqplib';
import { MESSAGE_ID_HEADER } from './message-id-header';
import { RabbitMqDelivery } from './rabbitmq-delivery';

const delivered = (messageId: unknown, headers: Record<string, unknown> = {}) =>
  ({
    content: Buffer.from('{}'),
    fields: {},
    properties: { messageId, headers },
  }) as unknown as ConsumeMessage;

const idOf = (message: ConsumeMessage) =>
  new RabbitMqDelivery({} as Channel, message, () => Promise.resolve()).messageId;

describe('RabbitMqDelivery.messageId', () => {
  it('takes the message-id property, else the header', () => {
    expect(idOf(delivered('m-1', { [MESSAGE_ID_HEADER]: 'h-1' }))).toBe('m-1');
    expect(idOf(delivered(undefined, { [MESSAGE_ID_HEADER]: 'h-1' }))).toBe('h-1');
  });

  it('takes the header when the property is empty', () => {
    expect(idOf(delivered('', { [MESSAGE_ID_HEADER]: 'h-1' }))).toBe('h-1');
    expect(idOf(delivered(''))).toBeUndefined();
  });
});
