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

describe('RabbitMqDelivery, an x-message-id header it cannot read exactly', () => {
  const read = (header: unknown) => {
    const delivery = new RabbitMqDelivery(
      {} as Channel,
      delivered(undefined, { [MESSAGE_ID_HEADER]: header }),
      () => Promise.resolve(),
    );
    return { id: delivery.messageId, unreadable: delivery.unreadableMessageId };
  };

  it('reads bytes that are UTF-8 text as that text', () => {
    expect(read(Buffer.from('pay-1', 'utf8'))).toEqual({ id: 'pay-1', unreadable: undefined });
  });

  it('refuses bytes that are not UTF-8 text: 61 ff and 61 fe would both read as "a\\uFFFD"', () => {
    for (const bytes of [
      [0x61, 0xff],
      [0x61, 0xfe],
    ]) {
      expect(read(Buffer.from(bytes))).toEqual({
        id: undefined,
        unreadable: expect.stringContaining('not UTF-8 text'),
      });
    }
  });

  it('reads a safe integer, and refuses one beyond 2^53, which arrives rounded', () => {
    expect(read(9007199254740991)).toEqual({ id: '9007199254740991', unreadable: undefined });
    expect(read(2 ** 60)).toEqual({
      id: undefined,
      unreadable: expect.stringContaining('beyond 2^53'),
    });
  });

  it('keeps a leading BOM: "abc" and BOM + "abc" are two ids', () => {
    expect(read(Buffer.from([0xef, 0xbb, 0xbf, 0x61, 0x62, 0x63]))).toEqual({
      id: '\uFEFFabc',
      unreadable: undefined,
    });
  });

  it('refuses a string holding U+FFFD, what amqplib made of bytes that are not UTF-8', () => {
    expect(read('a\uFFFD')).toEqual({
      id: undefined,
      unreadable: expect.stringContaining('U+FFFD'),
    });
    const property = new RabbitMqDelivery({} as Channel, delivered('a\uFFFD'), () =>
      Promise.resolve(),
    );
    expect(property.unreadableMessageId).toEqual(expect.stringContaining('U+FFFD'));
  });
});
