import type { ModuleRef } from '@nestjs/core';
import { getTransactionHostToken, type TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';

/**
 * The app's `TransactionHost` for a connection name (the `connectionName` given to
 * `ClsPluginTransactional`; undefined for the unnamed one). The name is only known from a
 * module's options, so the host cannot be a constructor dependency: it is looked up once every
 * provider exists, and a missing one fails the start with the module's name in the message.
 */
export function lookUpTransactionHost(
  moduleRef: ModuleRef,
  connectionName: string | undefined,
  moduleName: string,
): TransactionHost<TransactionalAdapterTypeOrm> {
  try {
    return moduleRef.get(getTransactionHostToken(connectionName), { strict: false });
  } catch {
    throw new Error(
      `${moduleName} needs a TransactionHost: register ClsModule with ClsPluginTransactional ` +
        `and the TypeORM adapter${connectionName ? ` for connection "${connectionName}"` : ''} (see the README).`,
    );
  }
}
