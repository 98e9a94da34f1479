/**
 * Loaded into a benchmarked worker with `--require` (it is in NODE_OPTIONS, so every thread of
 * the worker loads it: the main thread runs activities, the workflow thread runs the sandboxed
 * workflows and their sticky cache). Every second it writes this thread's V8 heap figures to
 * `$LOOPWRIGHT_BENCH_HEAP_PROBE/<threadId>.json`, so a benchmark can say which heap grows when
 * the worker's RSS does. Does nothing without that variable.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { isMainThread, threadId } from 'node:worker_threads';

/** What one thread last wrote. */
export interface HeapSample {
  main: boolean;
  heapTotalMiB: number;
  heapUsedMiB: number;
  externalMiB: number;
  at: number;
}

const dir = process.env.LOOPWRIGHT_BENCH_HEAP_PROBE;
if (dir) {
  const mib = (bytes: number) => Math.round(bytes / 1048576);
  setInterval(() => {
    const m = process.memoryUsage();
    const sample: HeapSample = {
      main: isMainThread,
      heapTotalMiB: mib(m.heapTotal),
      heapUsedMiB: mib(m.heapUsed),
      externalMiB: mib(m.external),
      at: Date.now(),
    };
    writeFileSync(path.join(dir, `${threadId}.json`), JSON.stringify(sample));
  }, 1000).unref();
}
