import { chmod } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';

/**
 * Where a test runner sends its results (node's, and jest's, vitest's, pytest's and go's through
 * the modules of channel-reporters.ts): a Unix socket the worker listens on, bound into the
 * sandbox read-only (see run-tests.ts), instead of a file in a folder the tests can write.
 *
 * A results file in a writable folder is no evidence: any process of the run (a test file the
 * change adds, the code under test in a child process) can rewrite it after the runner wrote a
 * failure, and turn the failure into a pass. Through the socket, what the runner sent cannot be
 * taken back: a process can connect, but not read what another sent, unlink the socket (it is a
 * mount point) or chmod it (read-only mount).
 *
 * The reporter connects as its module loads, which `node --test` awaits before it starts any
 * test file, so the runner is the first to connect; one connection is read at a time, and only
 * one that ended with the reporter's end marker lets another follow (`node --test a && node
 * --test b`). Any other connection is an intrusion: it is cut at once, and the run says so. A
 * connection that closes without the end marker (the runner was killed) ends the run's results.
 */
export interface ResultsChannel {
  /** The socket's path (pass it to the reporter and bind it into the sandbox). */
  path: string;
  /** Stops listening and returns what the runner sent, once every accepted connection has closed (at most `graceMs`). */
  close(graceMs?: number): Promise<ChannelResults>;
}

export interface ChannelResults {
  /** The lines the runner sent, end markers removed. */
  text: string;
  /** The same, per connection (one per runner the command started, in order). */
  connections: string[];
  /** Why the results cannot be trusted (another process connected, the runner stopped early, too much was sent). */
  problems: string[];
  /** Connections other than the runner's, cut at once. */
  intrusions: number;
  /** A connection closed without the end marker: its runner stopped before it finished. */
  cutOff: boolean;
}

/** The last line a reporter sends before it closes its connection. */
export const END_MARKER = '{"type":"loopwright:end"}';

/**
 * Listens at `socketPath`. With `single` (jest, vitest, pytest, go: the runner's module sends one
 * whole report), the first connection is the only one: any other, even after it ended, is an
 * intrusion. Without it (node), a connection that ended with the end marker lets another follow.
 */
export async function openResultsChannel(
  socketPath: string,
  capBytes: number,
  opts: { single?: boolean } = {},
): Promise<ResultsChannel> {
  const chunks: string[] = [];
  const problems: string[] = [];
  let bytes = 0;
  let intrusions = 0;
  let active: Socket | undefined;
  let accepting = true;
  let cutOff = false;
  let overCap = false;
  const closed: Array<Promise<void>> = [];

  const server: Server = createServer((socket) => {
    if (!accepting || active) {
      intrusions++;
      socket.destroy();
      return;
    }
    active = socket;
    if (opts.single) accepting = false;
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (data: string) => {
      bytes += Buffer.byteLength(data);
      if (bytes > capBytes) {
        if (!overCap) problems.push(`the runner sent more than ${capBytes} bytes of results: the rest was dropped`);
        overCap = true;
        accepting = false;
        return;
      }
      text += data;
    });
    socket.on('error', () => undefined);
    closed.push(
      new Promise((resolve) =>
        socket.once('close', () => {
          active = undefined;
          const ended = text.endsWith(`${END_MARKER}\n`);
          chunks.push(ended ? text.slice(0, -(END_MARKER.length + 1)) : text);
          if (!ended && !overCap && !cutOff) {
            cutOff = true;
            problems.push(
              "the test runner's reporter stopped before the runner finished (was it killed?): results after it are not accepted",
            );
          }
          if (!ended || opts.single) accepting = false;
          resolve();
        }),
      ),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => resolve());
  });
  // Connecting needs write permission only: nobody may open it for anything else.
  await chmod(socketPath, 0o222);

  return {
    path: socketPath,
    async close(graceMs = 2_000) {
      accepting = false;
      server.close();
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((resolve) => {
        timer = setTimeout(() => {
          active?.destroy();
          resolve();
        }, graceMs);
      });
      // Every process of the run has ended: their connections are closed or closing.
      await Promise.race([Promise.all(closed), late]);
      clearTimeout(timer);
      if (intrusions > 0)
        problems.push(
          `something in the run besides the runner's reporter connected to send test results (${intrusions} ${intrusions === 1 ? 'connection' : 'connections'}, refused)`,
        );
      return { text: chunks.join(''), connections: [...chunks], problems, intrusions, cutOff };
    },
  };
}
