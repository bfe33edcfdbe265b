import { type RequestProfile, weightedProfile } from './perf-profile';

/** A frame of V8's sampling heap profile (the Chrome DevTools protocol's `Runtime.CallFrame`). */
interface CallFrame {
  functionName: string;
  url: string;
  /** Zero-based, as the protocol gives them. */
  lineNumber: number;
  columnNumber: number;
}

interface SamplingHeapProfileNode {
  callFrame: CallFrame;
  /** Bytes the samples of this frame stand for, its children's not included. */
  selfSize: number;
  children: SamplingHeapProfileNode[];
}

/** What `HeapProfiler.stopSampling` returns (its `samples`, when present, are not read). */
export interface SamplingHeapProfile {
  head: SamplingHeapProfileNode;
}

/**
 * Bytes allocated per request, grouped as `perf-profile.ts` groups CPU: by the JavaScript they
 * were allocated for (the innermost frame outside Node's core: a Buffer that pg's parser makes
 * counts for pg-protocol) and, for the library, by its function. V8's built-ins (`JSON.parse`,
 * say) have no script: their bytes count for the JavaScript that called them.
 */
export function allocationProfile(profile: SamplingHeapProfile, requests: number): RequestProfile {
  const stacks: { frames: string[]; weight: number }[] = [];
  // Depth first, without recursion: a deep stack must not overflow this one.
  const pending: { node: SamplingHeapProfileNode; outer: string[] }[] = [
    { node: profile.head, outer: [] },
  ];
  while (pending.length > 0) {
    const { node, outer } = pending.pop() as (typeof pending)[number];
    // Innermost first, as perf gives its stacks.
    const frames = [frameName(node.callFrame), ...outer];
    if (node.selfSize > 0) stacks.push({ frames, weight: node.selfSize });
    for (const child of node.children) pending.push({ node: child, outer: frames });
  }
  return weightedProfile(stacks, requests);
}

/**
 * A frame as perf names JavaScript (`JS:name /path/file.js:line:column`), so that the two
 * profiles group alike; a frame without a script (a built-in, V8's `(root)`) is no JavaScript.
 */
function frameName({ functionName, url, lineNumber, columnNumber }: CallFrame): string {
  if (!url) return `(native) ${functionName || '(anonymous)'}`;
  // An anonymous function keeps its empty name, as perf writes it (`JS:* /path…`).
  return `JS:${functionName} ${url.replace(/^file:\/\//, '')}:${lineNumber + 1}:${columnNumber + 1}`;
}
