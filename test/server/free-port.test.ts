import { createServer } from 'node:net';
import { isPortFree, portPicker } from '../../server/free-port';

test('a port picker hands out each port once and never a reserved one, even when the OS offers them again', async () => {
  const offered = [5001, 5001, 5002, 5003, 5002, 5004];
  const next = portPicker([5003, undefined], async () => offered.shift() ?? 0);
  expect([await next(), await next(), await next()]).toEqual([5001, 5002, 5004]);
});

test('by default it picks free ports of this machine', async () => {
  const next = portPicker([]);
  const ports = [await next(), await next()];
  expect(ports[0]).not.toBe(ports[1]);
  for (const port of ports) expect(await isPortFree(port)).toBe(true);
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(ports[0], '127.0.0.1', resolve));
  expect(await isPortFree(ports[0]!)).toBe(false);
  await new Promise((resolve) => server.close(resolve));
});
