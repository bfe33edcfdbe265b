import { Session } from 'node:inspector/promises';
import { ConflictException, Controller, HttpCode, Post } from '@nestjs/common';
import type { HeapProfiler } from 'node:inspector';

/**
 * V8's sampling heap profiler, for `npm run bench:profile -- --allocations`: started and stopped
 * around a scenario's load, it says which code allocated the bytes a request costs. Objects the
 * garbage collector took meanwhile stay in the profile (a request's garbage is most of what it
 * allocates); without those two flags V8 would report only what is still alive at the stop.
 */
@Controller('bench/allocations')
export class BenchAllocationsController {
  private session?: Session;

  @Post('start')
  @HttpCode(204)
  async start(): Promise<void> {
    if (this.session) throw new ConflictException('allocation sampling is already on');
    const session = new Session();
    session.connect();
    this.session = session;
    await session.post('HeapProfiler.enable');
    // The flags are V8's (11.x and later) but not yet in @types/node's protocol types.
    const sampling: HeapProfiler.StartSamplingParameterType & Record<string, unknown> = {
      // One sample per 4 KiB on average: tens of thousands over a scenario's run.
      samplingInterval: 4096,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    };
    await session.post('HeapProfiler.startSampling', sampling);
  }

  @Post('stop')
  @HttpCode(200)
  async stop(): Promise<HeapProfiler.SamplingHeapProfile> {
    const session = this.session;
    if (!session) throw new ConflictException('allocation sampling is off');
    this.session = undefined;
    try {
      const { profile } = await session.post('HeapProfiler.stopSampling');
      return profile;
    } finally {
      session.disconnect();
    }
  }
}
