import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { markOwner, sweepLeftBehind } from '../../server/left-behind';
import { gone, goneProcess, here, startOf } from '../helpers/processes';

const TWO_DAYS = 2 * 24 * 3600;
let parent: string;
let sleeper: ReturnType<typeof spawn> | undefined;
beforeEach(() => {
  parent = mkdtempSync(path.join(tmpdir(), 'lw-left-behind-'));
});
afterEach(() => {
  sleeper?.kill('SIGKILL');
  rmSync(parent, { recursive: true, force: true });
});

/** A folder as a killed worker leaves it: the owner it names (if any), its age in seconds. */
function left(name: string, owner: object | undefined, ageSeconds = 0): string {
  const at = path.join(parent, `work-${name}`);
  mkdirSync(at);
  if (owner) writeFileSync(path.join(at, 'owner'), JSON.stringify(owner));
  const t = Date.now() / 1000 - ageSeconds;
  utimesSync(at, t, t);
  return at;
}

describe('sweepLeftBehind', () => {
  test('removes a folder whose process is gone, however young; keeps a live process’s, however old', async () => {
    sleeper = spawn('sleep', ['60']);
    await new Promise((resolve) => sleeper!.on('spawn', resolve));
    const live = { ...here(), pid: sleeper.pid!, start: startOf(sleeper.pid!) };
    const folders = {
      dead: left('dead', await goneProcess()),
      live: left('live', live, TWO_DAYS),
      // The pid taken again by another process: not the owner.
      reused: left('reused', { ...live, start: String(Number(live.start) - 1) }),
      'other boot': left('other-boot', { ...live, boot: 'another-boot' }),
      'no owner, old': left('unowned-old', undefined, TWO_DAYS),
      // Being made right now (no owner written yet).
      'no owner, new': left('unowned-new', undefined),
      // A worker of another pid namespace sharing the folder: judged by age alone.
      'elsewhere, new': left('elsewhere-new', { ...live, pidNamespace: 'pid:[1]', pid: 1 }),
      'elsewhere, old': left('elsewhere-old', { ...live, pidNamespace: 'pid:[1]', pid: 1 }, TWO_DAYS),
      'unreadable owner, new': left('garbage-new', undefined),
    };
    writeFileSync(path.join(folders['unreadable owner, new'], 'owner'), '{ not json');
    const other = path.join(parent, 'other-dead');
    mkdirSync(other);
    writeFileSync(path.join(other, 'owner'), JSON.stringify(await goneProcess()));
    sweepLeftBehind(parent, 'work-', (d) => path.join(d, 'owner'));
    await gone(
      folders.dead,
      folders.reused,
      folders['other boot'],
      folders['no owner, old'],
      folders['elsewhere, old'],
    );
    expect(Object.fromEntries(Object.entries(folders).map(([k, at]) => [k, existsSync(at)]))).toEqual({
      dead: false,
      live: true,
      reused: false,
      'other boot': false,
      'no owner, old': false,
      'no owner, new': true,
      'elsewhere, new': true,
      'elsewhere, old': false,
      'unreadable owner, new': true,
    });
    // Only names with the prefix are looked at.
    expect(existsSync(other)).toBe(true);
  });

  test('markOwner names this process, and a folder it owns stays', async () => {
    const mine = left('mine', undefined, TWO_DAYS);
    markOwner(path.join(mine, 'owner'));
    expect(JSON.parse(readFileSync(path.join(mine, 'owner'), 'utf8'))).toEqual({
      ...here(),
      pid: process.pid,
      start: startOf(process.pid),
    });
    sweepLeftBehind(parent, 'work-', (d) => path.join(d, 'owner'));
    await new Promise((r) => setTimeout(r, 100));
    expect(existsSync(mine)).toBe(true);
  });
});
