import { Worker } from 'node:worker_threads';

/** Longest part of a line that is matched (UTF-16 units): RE2's work grows with line and pattern. */
export const MAX_MATCH_LINE_CHARS = 4096;
/** Longest part of a matching line that is shown. */
const MAX_LINE_CHARS = 300;

/** What the matcher found in one file: up to `room` shown lines, and how many matched in all. */
export interface FileMatches {
  shown: string[];
  matches: number;
  cutLines: number;
}

// The matching runs in a worker thread: RE2 is linear, but linear in a long line times a
// big pattern is still long, and on the main thread it would hold every run's workflow
// activations and queries. The worker can also be terminated mid-match (deadline, cancel).
const MATCHER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { RE2JS } = require(workerData.re2js);
const regex = RE2JS.compile(workerData.pattern);
const decoder = new TextDecoder('utf-8');
parentPort.on('message', ({ rel, bytes, room }) => {
  const lines = decoder.decode(bytes).split('\\n');
  const shown = [];
  let matches = 0;
  let cutLines = 0;
  for (let i = 0; i < lines.length; i += 1) {
    const line = lines[i];
    if (line.length > workerData.maxMatchChars) cutLines += 1;
    if (!regex.test(line.length > workerData.maxMatchChars ? line.slice(0, workerData.maxMatchChars) : line)) continue;
    matches += 1;
    if (shown.length >= room) continue;
    // A trailing CR is dropped; a line too long to show is cut (without scanning all of it).
    const text = line.length > workerData.maxShownChars + 1 ? line : line.replace(/\\r$/, '');
    shown.push(rel + ':' + (i + 1) + ': ' + (text.length > workerData.maxShownChars ? text.slice(0, workerData.maxShownChars) + '…' : text));
  }
  parentPort.postMessage({ shown, matches, cutLines });
});
`;

/** A worker thread that matches one pattern against files, one at a time; stopped by `signal`. */
export class LineMatcher {
  private readonly worker: Worker;
  private pending?: { resolve: (m: FileMatches) => void; reject: (err: unknown) => void };
  private failure?: unknown;

  constructor(
    pattern: string,
    private readonly signal?: AbortSignal,
  ) {
    this.worker = new Worker(MATCHER_SOURCE, {
      eval: true,
      workerData: {
        re2js: require.resolve('re2js'),
        pattern,
        maxMatchChars: MAX_MATCH_LINE_CHARS,
        maxShownChars: MAX_LINE_CHARS,
      },
      resourceLimits: { maxOldGenerationSizeMb: 256 },
      stdout: true,
      stderr: true,
    });
    this.worker.on('message', (m: FileMatches) => this.settle(undefined, m));
    this.worker.on('error', (err) => this.settle(err));
    this.worker.on('exit', (code) => this.settle(new Error(`the search worker stopped (exit code ${code})`)));
    signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  private readonly onAbort = (): void => {
    this.settle(this.signal?.reason);
    void this.worker.terminate();
  };

  private settle(err: unknown, matches?: FileMatches): void {
    const pending = this.pending;
    this.pending = undefined;
    if (err !== undefined) this.failure ??= err;
    if (!pending) return;
    if (matches) pending.resolve(matches);
    else pending.reject(this.failure);
  }

  match(rel: string, bytes: Buffer, room: number): Promise<FileMatches> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    return new Promise<FileMatches>((resolve, reject) => {
      this.pending = { resolve, reject };
      // The bytes are not used here again: hand them over instead of copying them.
      this.worker.postMessage({ rel, bytes, room }, [bytes.buffer as ArrayBuffer]);
    });
  }

  async close(): Promise<void> {
    this.signal?.removeEventListener('abort', this.onAbort);
    this.failure ??= new Error('the search worker was closed');
    await this.worker.terminate();
  }
}
