import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { MESSAGING_OPTIONS } from './messaging.constants';
import type { ResolvedMessagingOptions } from './messaging.defaults';

/**
 * Connects the transport before the relay starts (bootstrap comes after every module's init)
 * and closes it after the relay stopped (shutdown comes after before-shutdown).
 */
@Injectable()
export class TransportLifecycle implements OnModuleInit, OnApplicationShutdown {
  constructor(@Inject(MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions) {}

  async onModuleInit(): Promise<void> {
    await this.options.transport?.start?.();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.options.transport?.close?.();
  }
}
