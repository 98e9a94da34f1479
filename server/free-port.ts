import { createServer } from 'net';

/** A TCP port that was free on 127.0.0.1 a moment ago (bind port 0, read it, close). For tests. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen({ port: 0, host: '127.0.0.1', exclusive: true }, () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => (port ? resolve(port) : reject(new Error('could not read the bound port'))));
    });
  });
}

/** True when nothing listens on `host:port` (this process could bind it); false on EADDRINUSE. */
export function isPortFree(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', (err: NodeJS.ErrnoException) => (err.code === 'EADDRINUSE' ? resolve(false) : reject(err)));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/**
 * Free ports for one start of several processes: each one free a moment ago, none handed out
 * twice and none of `reserved` (ports chosen already but not bound yet, such as the Web UI's).
 * {@link freePort} alone can return a port it returned before, since nothing holds it until its
 * process binds it.
 */
export function portPicker(
  reserved: Iterable<number | undefined>,
  source: () => Promise<number> = freePort,
): () => Promise<number> {
  const taken = new Set([...reserved].filter((p): p is number => p !== undefined));
  return async () => {
    for (;;) {
      const port = await source();
      if (taken.has(port)) continue;
      taken.add(port);
      return port;
    }
  };
}
