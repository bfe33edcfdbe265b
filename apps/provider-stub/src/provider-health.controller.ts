import { Controller, Get } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { PROVIDER_STUB_CONNECTION } from './provider-stub.connection';

/** Lets a payments API recognise a running stub (see startProviderStub). */
export const PROVIDER_STUB_NAME = 'provider-stub';

@Controller('health')
export class ProviderHealthController {
  constructor(
    @InjectDataSource(PROVIDER_STUB_CONNECTION) private readonly dataSource: DataSource,
  ) {}

  @Get()
  async check(): Promise<{ status: 'ok'; service: string }> {
    await this.dataSource.query('SELECT 1');
    return { status: 'ok', service: PROVIDER_STUB_NAME };
  }
}
