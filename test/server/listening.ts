import { readdirSync, readFileSync, readlinkSync } from 'fs';
import { request } from 'http';
import { connect } from 'net';

/** A socket a process has bound, as the kernel lists it (what `ss -ltnup` shows). */
export interface BoundSocket {
  proto: 'tcp' | 'tcp6' | 'udp' | 'udp6';
  address: string;
  port: number;
}

/**
 * The TCP sockets `pid` listens on and the UDP sockets it has bound without connecting, read from
 * /proc (Linux only): the socket inodes among its fds, matched against /proc/net/{tcp,tcp6,udp,udp6}.
 */
export function boundSockets(pid: number): BoundSocket[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
      const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
      if (inode) inodes.add(inode);
    } catch {
      // the fd closed while we listed them
    }
  }
  const found: BoundSocket[] = [];
  // 0A is LISTEN for TCP; 07 (CLOSE) is a bound, unconnected UDP socket.
  for (const [proto, state] of [
    ['tcp', '0A'],
    ['tcp6', '0A'],
    ['udp', '07'],
    ['udp6', '07'],
  ] as const) {
    for (const line of readFileSync(`/proc/net/${proto}`, 'utf8').trim().split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      const [hexAddr = '', hexPort = ''] = (cols[1] ?? '').split(':');
      if (cols[3] !== state || !inodes.has(cols[9] ?? '')) continue;
      found.push({ proto, address: decodeAddress(hexAddr), port: parseInt(hexPort, 16) });
    }
  }
  return found.sort((a, b) => a.port - b.port);
}

function decodeAddress(hex: string): string {
  if (hex.length === 8) return [3, 2, 1, 0].map((i) => parseInt(hex.slice(i * 2, i * 2 + 2), 16)).join('.');
  return hex === '0'.repeat(32) ? '::' : `ipv6:${hex}`;
}

export interface HttpAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One HTTP/1.1 request to 127.0.0.1:port with exactly these headers (Host included, unlike fetch). */
export function httpRequest(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers, timeout: 15_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${path} on port ${port}: no answer in 15 s`)));
    req.on('error', reject);
    req.end(body);
  });
}

/** A raw HTTP/1.0 request without a Host header (what no browser sends); resolves with the status line. */
export function http10WithoutHost(port: number, path: string, body: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.end(
        `POST ${path} HTTP/1.0\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
    });
    let text = '';
    socket.setTimeout(15_000, () => socket.destroy(new Error('no answer in 15 s')));
    socket.on('data', (d) => (text += d.toString()));
    socket.on('end', () => resolve(text.split('\r\n')[0] ?? ''));
    socket.on('error', reject);
  });
}
