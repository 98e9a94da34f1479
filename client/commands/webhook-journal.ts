import { mkdir, open, readFile, rename, rm, type FileHandle } from 'node:fs/promises';
import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ConfigError } from '../../common/errors';
import { isPidAlive } from '../../server/dev-server-lock';
import { tryPidLock } from '../../server/pid-lock';
import { loopwrightHome } from '../../server/paths';
import { hours, HttpError, type WebhookLimits } from './webhook-http';

/**
 * One accepted delivery, or one remembered entry: its delivery id, and the SHA-256 (hex) of its
 * signed body with the loop it was accepted for. Never the body itself: it may hold secrets.
 */
export interface SeenEntry {
  /** When it was accepted, in ms since the epoch. */
  at: number;
  delivery?: string;
  body?: string;
  loop?: string;
}

/** `<LOOPWRIGHT_HOME>/webhooks/seen.jsonl`: where `loopwright webhooks` remembers what it accepted. */
export function webhookJournalPath(env: Record<string, string | undefined>): string {
  return join(loopwrightHome(env as NodeJS.ProcessEnv), 'webhooks', 'seen.jsonl');
}

export interface JournalOptions {
  /** Entries older than this are dropped at open. */
  windowMs: number;
  /** At most this many entries are kept at open; past twice as many lines the file is rewritten. */
  maxLines: number;
  /** One line when a rewrite fails (the file keeps growing and works). */
  log?: (line: string) => void;
}

/**
 * The receiver's replay memory on disk: an append-only file of JSON lines, one per accepted
 * delivery, each written and fsynced before the delivery is answered, so a restart (or a crash)
 * forgets nothing accepted. Opening it reads the entries of the window, ignores a torn last line
 * (a crash mid-write), rewrites the file with only those (temp file, fsync, rename; mode 0600),
 * and takes `<file>.lock`. One receiver per file: a second `loopwright webhooks` on the same
 * LOOPWRIGHT_HOME is refused while the first lives, since each keeps its memory in its own
 * process (a replay sent to the other would pass) and a rewrite by one would drop the other's lines.
 */
export class ReplayJournal {
  private lines: number;
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(
    readonly path: string,
    /** The entries of the window found at open, oldest first. */
    readonly loaded: SeenEntry[],
    private file: FileHandle,
    private readonly opts: JournalOptions,
  ) {
    this.lines = loaded.length;
  }

  /** Opens (creating) the file; any file-system failure is a ConfigError (exit 2) naming the path. */
  static async open(path: string, opts: JournalOptions): Promise<ReplayJournal> {
    const fail = (doing: string, err: unknown): ConfigError => {
      const e = err as NodeJS.ErrnoException;
      return new ConfigError(
        `cannot ${doing} the webhook replay memory ${path} (${e.code ?? e.message}): make it a file this user can read and write (mode 0600), or set LOOPWRIGHT_HOME to a folder it owns`,
      );
    };
    await mkdir(dirname(path), { recursive: true, mode: 0o700 }).catch((err: unknown) => {
      throw fail('create the folder of', err);
    });
    takeLock(`${path}.lock`, path, fail);
    try {
      const text = await readFile(path, 'utf8').catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT') return '';
        throw fail('read', err);
      });
      const now = Date.now();
      const loaded = parseJournal(text, path)
        .filter((e) => now - e.at < opts.windowMs)
        .slice(-opts.maxLines);
      await writeAtomically(path, loaded).catch((err: unknown) => {
        throw fail('rewrite', err);
      });
      const file = await open(path, 'a', 0o600).catch((err: unknown) => {
        throw fail('open', err);
      });
      return new ReplayJournal(path, loaded, file, opts);
    } catch (err) {
      rmSync(`${path}.lock`, { force: true });
      throw err;
    }
  }

  /**
   * Appends `entry` and fsyncs it; resolves once it is on disk. Past twice `maxLines` lines the
   * file is rewritten from `live()` (what the receiver still remembers).
   */
  record(entry: SeenEntry, live: () => SeenEntry[]): Promise<void> {
    const next = this.queue.then(async () => {
      await this.file.write(line(entry));
      await this.file.sync();
      if (++this.lines > 2 * this.opts.maxLines) await this.compact(live());
    });
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async compact(entries: SeenEntry[]): Promise<void> {
    try {
      await writeAtomically(this.path, entries);
      const file = await open(this.path, 'a', 0o600);
      await this.file.close();
      this.file = file;
      this.lines = entries.length;
    } catch (err) {
      this.opts.log?.(`webhooks: could not rewrite ${this.path} (${(err as Error).message}); it keeps growing`);
    }
  }

  /** Waits for pending writes, closes the file and releases the lock. */
  async close(): Promise<void> {
    await this.queue;
    await this.file.close();
    rmSync(`${this.path}.lock`, { force: true });
  }
}

function line(e: SeenEntry): string {
  return `${JSON.stringify({ at: new Date(e.at).toISOString(), delivery: e.delivery, body: e.body, loop: e.loop })}\n`;
}

/** The file's entries; a last line without its newline is a write a crash cut short, and is ignored. */
function parseJournal(text: string, path: string): SeenEntry[] {
  const lines = text.split('\n');
  const torn = lines.pop(); // '' when the file ends with a newline
  const entries: SeenEntry[] = [];
  for (const [i, raw] of lines.entries()) {
    const entry = parseLine(raw);
    if (entry === undefined)
      throw new ConfigError(
        `line ${i + 1} of the webhook replay memory ${path} is not a delivery record: fix or delete that line (deleting the file forgets accepted deliveries: then rotate LOOPWRIGHT_WEBHOOK_SECRET)`,
      );
    entries.push(entry);
  }
  const last = torn ? parseLine(torn) : undefined;
  return last ? [...entries, last] : entries;
}

function parseLine(raw: string): SeenEntry | undefined {
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    return undefined;
  }
  if (typeof v !== 'object' || v === null) return undefined;
  const { at, delivery, body, loop } = v as Record<string, unknown>;
  const time = typeof at === 'string' ? Date.parse(at) : NaN;
  const ok =
    Number.isFinite(time) &&
    (delivery === undefined || (typeof delivery === 'string' && delivery !== '')) &&
    (body === undefined || (typeof body === 'string' && /^[0-9a-f]{64}$/.test(body) && typeof loop === 'string')) &&
    (delivery !== undefined || body !== undefined);
  return ok ? { at: time, delivery: delivery as string, body: body as string, loop: loop as string } : undefined;
}

/** Writes the entries to a temp file (0600), fsyncs it, renames it over `path` and fsyncs the folder. */
async function writeAtomically(path: string, entries: SeenEntry[]): Promise<void> {
  const temp = `${path}.${process.pid}.tmp`;
  const file = await open(temp, 'w', 0o600);
  try {
    await file.write(entries.map(line).join(''));
    await file.sync();
  } finally {
    await file.close();
  }
  try {
    await rename(temp, path);
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
  const dir = await open(dirname(path), 'r');
  await dir.sync().finally(() => dir.close());
}

/** Creates `lock` holding this pid; one left by a process that is gone (or by this one) is taken over. */
function takeLock(lock: string, path: string, fail: (doing: string, err: unknown) => ConfigError): void {
  for (let attempt = 0; ; attempt++) {
    let tried: ReturnType<typeof tryPidLock>;
    try {
      tried = tryPidLock(lock, { mode: 0o600 });
    } catch (err) {
      throw fail('lock', err);
    }
    if (tried.taken) return;
    if (tried.holder !== undefined && tried.holder !== process.pid && isPidAlive(tried.holder))
      throw new ConfigError(
        `another loopwright webhooks (pid ${tried.holder}) keeps its replay memory in ${path}: stop it, or give this receiver its own LOOPWRIGHT_HOME`,
      );
    if (attempt > 0) throw fail('lock', new Error(`${lock} is held and could not be taken over`));
    rmSync(lock, { force: true });
  }
}

/**
 * Delivery ids (or signed bodies) accepted within the replay window, and ones being handled
 * now, oldest first, each with a note (the loop a body was for).
 */
export class DeliveryIds {
  private readonly accepted = new Map<string, { at: number; note: string }>();
  constructor(private readonly limits: WebhookLimits) {}

  /** Forgets what the window or the cap lets go of. */
  private expire(): void {
    const now = Date.now();
    for (const [old, { at }] of this.accepted) {
      if (now - at < this.limits.replayWindowMs && this.accepted.size < this.limits.maxDeliveryIds) break;
      this.accepted.delete(old);
    }
  }

  /** The note of `id` when it was accepted within the window, else undefined. */
  seen(id: string): string | undefined {
    this.expire();
    return this.accepted.get(id)?.note;
  }

  /** Throws 409 when the id was accepted within the window or is being handled right now. */
  reserve(id: string, note = ''): void {
    if (this.seen(id) !== undefined)
      throw new HttpError(
        409,
        `replayed delivery ${id}: a delivery with this id was accepted within the last ${hours(this.limits)} hours`,
      );
    this.accepted.set(id, { at: Date.now(), note });
  }

  release(id: string): void {
    this.accepted.delete(id);
  }

  /** Remembers `id` as accepted at `at` (loaded from the journal, oldest first). */
  remember(id: string, at: number, note: string): void {
    this.accepted.delete(id);
    this.accepted.set(id, { at, note });
    this.expire();
  }

  /**
   * What is remembered now, oldest first, as journal entries of the given kind (ones being handled
   * right now too: a rewrite of the journal may keep one that then fails, refused after a restart).
   */
  entries(kind: 'delivery' | 'body'): SeenEntry[] {
    this.expire();
    return [...this.accepted].map(([id, { at, note }]) =>
      kind === 'delivery' ? { at, delivery: id } : { at, body: id, loop: note },
    );
  }
}
