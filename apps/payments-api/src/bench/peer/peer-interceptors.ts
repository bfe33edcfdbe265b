import { Inject, Injectable, type Type } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { NodeIdempotencyInterceptor } from '@node-idempotency/nestjs';

/** The peer's storage adapters, built by its own `buildStorageAdapter` when the module starts. */
export const PEER_MEMORY_STORAGE = Symbol('bench:peer-memory-storage');
export const PEER_REDIS_STORAGE = Symbol('bench:peer-redis-storage');

/** The peer's options: its defaults (`{}`). */
export const PEER_OPTIONS = Symbol('bench:peer-options');

export type PeerStorage = ConstructorParameters<typeof NodeIdempotencyInterceptor>[1];
type PeerOptions = ConstructorParameters<typeof NodeIdempotencyInterceptor>[2];

/**
 * `@node-idempotency/nestjs` on the storage that `storage` names: the peer the performance issue
 * measures this library against, with its default options. A class per storage, because Nest
 * builds a route's interceptor from its class; each parameter is named here, because the
 * parent's own `@Inject` tokens are those of the peer's module, which is not imported.
 */
function peerInterceptor(storage: symbol): Type<NodeIdempotencyInterceptor> {
  @Injectable()
  class PeerInterceptor extends NodeIdempotencyInterceptor {
    constructor(
      reflector: Reflector,
      @Inject(storage) store: PeerStorage,
      @Inject(PEER_OPTIONS) options: PeerOptions,
    ) {
      super(reflector, store, options);
    }
  }
  return PeerInterceptor;
}

/** The peer with its records in this process's memory. */
export const PeerMemoryInterceptor = peerInterceptor(PEER_MEMORY_STORAGE);

/** The peer on Redis: a create costs it two Redis round trips, a replay two. */
export const PeerRedisInterceptor = peerInterceptor(PEER_REDIS_STORAGE);
