/**
 * The cluster's private PostgreSQL: its binaries, its data folder (initdb) and the command line
 * that starts it on its own port, as an unprivileged user when Loopwright runs as root (initdb
 * and postgres refuse to run as root).
 */
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, realpathSync, statSync, writeFileSync } from 'fs';
import { dirname, join, resolve } from 'path';
import { ConfigError, UsageError } from '../../common/errors';
import { isExecutableFile, whichAll } from '../binary-locator';
import { failureReason, runCommand } from '../run-command';
import { type ClusterProcess, isRunning, waitFor } from './processes';

/** The user and password the Temporal services connect with (as in docker-compose.yml). */
export const DB_USER = 'temporal';

/** Who runs PostgreSQL: this process, or (as root) the `postgres` user or `LOOPWRIGHT_PG_USER`. */
export interface RunAs {
  uid: number;
  gid: number;
  name: string;
}

/**
 * The folder of `initdb`, `postgres` and `pg_isready`: `LOOPWRIGHT_PG_BIN`, else the folder of
 * `initdb` on PATH (symlinks followed), else the newest `/usr/lib/postgresql/<version>/bin` (Debian and Ubuntu keep
 * them off PATH). Throws a one-line {@link ConfigError} when there is none.
 */
export function findPostgresBin(env: NodeJS.ProcessEnv = process.env): string {
  const explicit = env.LOOPWRIGHT_PG_BIN?.trim();
  if (explicit) {
    if (!isExecutableFile(join(explicit, 'postgres')))
      throw new ConfigError(
        `LOOPWRIGHT_PG_BIN is set to ${explicit}, which has no postgres binary: point it at PostgreSQL's bin folder or unset it`,
      );
    return explicit;
  }
  // The real folder of initdb on PATH (a symlink in /usr/local/bin, say), where pg_isready is too.
  const onPath = whichAll('initdb', env.PATH)
    .map((file) => join(realpathSync(file), '..'))
    .find(complete);
  if (onPath) return onPath;
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => /^\d+$/.test(v))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  const found = versions.map((v) => join(root, v, 'bin')).find(complete);
  if (!found)
    throw new ConfigError(
      'PostgreSQL is not installed (no initdb on PATH or in /usr/lib/postgresql/*/bin): install it (apt-get install postgresql) or set LOOPWRIGHT_PG_BIN to its bin folder',
    );
  return found;
}

function complete(dir: string): boolean {
  return ['initdb', 'postgres', 'pg_isready', 'psql'].every((name) => isExecutableFile(join(dir, name)));
}

/** Who PostgreSQL runs as: undefined (this process) unless this process is root. */
export async function postgresUser(env: NodeJS.ProcessEnv = process.env): Promise<RunAs | undefined> {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return undefined;
  const name = env.LOOPWRIGHT_PG_USER?.trim() || 'postgres';
  const [uid, gid] = await Promise.all([runCommand('id', ['-u', name]), runCommand('id', ['-g', name])]);
  if (uid.code !== 0 || gid.code !== 0) {
    throw new ConfigError(
      `running as root, PostgreSQL needs an unprivileged user and there is no user ${name}: create it, or set LOOPWRIGHT_PG_USER to another one`,
    );
  }
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()), name };
}

/**
 * Creates the data folder with `initdb` when it has none yet: user {@link DB_USER} with
 * `password`, scram-sha-256 over TCP. The folder is made and handed to `runAs` first.
 */
export async function initDataDir(
  bin: string,
  dataDir: string,
  password: string,
  runAs: RunAs | undefined,
  log: (line: string) => void,
): Promise<void> {
  if (existsSync(join(dataDir, 'PG_VERSION'))) return;
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const pwfile = join(dataDir, '..', 'pg-password');
  writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
  if (runAs) {
    chownSync(dataDir, runAs.uid, runAs.gid);
    chownSync(pwfile, runAs.uid, runAs.gid);
  }
  log(`initdb ${dataDir}${runAs ? ` (as ${runAs.name})` : ''}`);
  const args = [
    '-D',
    dataDir,
    '-U',
    DB_USER,
    `--pwfile=${pwfile}`,
    '--auth=scram-sha-256',
    '--encoding=UTF8',
    '--no-instructions',
  ];
  const result = await runCommand(join(bin, 'initdb'), args, { timeoutMs: 120_000, ...spawnAs(runAs) });
  if (result.code !== 0 || result.error) throw new Error(`initdb failed: ${failureReason(result)}`);
}

/** Spawn options that run a command as `runAs` (nothing when undefined). */
export function spawnAs(runAs: RunAs | undefined): { uid?: number; gid?: number } {
  return runAs ? { uid: runAs.uid, gid: runAs.gid } : {};
}

/**
 * The arguments of `postgres` for the cluster: TCP on 127.0.0.1:`port` only (no Unix socket, so
 * nothing needs /var/run/postgresql), and connections for five Temporal processes of up to 30
 * each plus the schema tool (PostgreSQL's default of 100 is too few).
 */
export function postgresArgs(dataDir: string, port: number): string[] {
  return [
    '-D',
    dataDir,
    '-p',
    String(port),
    '-c',
    'listen_addresses=127.0.0.1',
    '-c',
    'unix_socket_directories=',
    '-c',
    'max_connections=300',
    '-c',
    'shared_buffers=128MB',
  ];
}

/** True when `pg_isready` says the server on 127.0.0.1:`port` accepts connections. */
export async function isPostgresReady(bin: string, port: number): Promise<boolean> {
  const result = await runCommand(
    join(bin, 'pg_isready'),
    ['-h', '127.0.0.1', '-p', String(port), '-U', DB_USER, '-d', 'postgres'],
    { timeoutMs: 10_000 },
  );
  return result.code === 0;
}

/** The number `sql` (one value) yields in database `db`, or undefined when the query fails (no table yet, say). */
export async function queryNumber(
  bin: string,
  port: number,
  password: string,
  db: string,
  sql: string,
): Promise<number | undefined> {
  const result = await runCommand(
    join(bin, 'psql'),
    ['-h', '127.0.0.1', '-p', String(port), '-U', DB_USER, '-d', db, '-tAc', sql],
    {
      // Only what psql needs: none of this process's other variables (keys, tokens) reach it.
      env: { PATH: process.env.PATH ?? '', LANG: 'C.UTF-8', PGPASSWORD: password, PGCONNECT_TIMEOUT: '5' },
      timeoutMs: 15_000,
    },
  );
  const value = Number(result.stdout.trim());
  return result.code === 0 && result.stdout.trim() !== '' && Number.isFinite(value) ? value : undefined;
}

/** The password of the Temporal databases' user: the server is reachable on 127.0.0.1 only. */
export const DB_PASSWORD = 'temporal';

/** Initializes (once) and starts the cluster's PostgreSQL on 127.0.0.1:`port`, as `runAs` when given, and waits until it accepts connections. */
export async function startPostgres(
  dir: string,
  bin: string,
  runAs: RunAs | undefined,
  port: number,
  add: (p: ClusterProcess) => ClusterProcess,
  log: (line: string) => void,
): Promise<void> {
  const dataDir = join(dir, 'pgdata');
  // The unprivileged user must get through the cluster folder to its data folder (nothing else is readable).
  if (runAs) {
    chmodSync(dir, 0o711);
    for (let up = dirname(resolve(dir)); up !== dirname(up); up = dirname(up)) {
      if ((statSync(up).mode & 0o001) === 0)
        throw new UsageError(
          `PostgreSQL runs as ${runAs.name}, who cannot get through ${up} to ${dir}: choose another --dir, or let others through it (chmod o+x)`,
        );
    }
  }
  await initDataDir(bin, dataDir, DB_PASSWORD, runAs, log);
  log(`PostgreSQL on 127.0.0.1:${port}${runAs ? ` as ${runAs.name}` : ''}`);
  const p = add({
    name: 'postgres',
    command: join(bin, 'postgres'),
    args: postgresArgs(dataDir, port),
    env: { PATH: process.env.PATH ?? '', LANG: 'C.UTF-8' },
    uid: runAs?.uid,
    gid: runAs?.gid,
    logFile: join(dir, 'logs', 'postgres.log'),
    stopSignal: 'SIGINT',
  });
  await waitFor(
    'PostgreSQL',
    async () => {
      if (!isRunning(p)) throw new Error(`PostgreSQL exited at start: see ${p.logFile}`);
      return isPostgresReady(bin, port);
    },
    p.logFile,
    60_000,
  );
}
