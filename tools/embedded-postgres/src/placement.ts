/**
 * Where the embedded PostgreSQL can live when the process runs as root.
 *
 * PostgreSQL runs as the unprivileged `postgres` user (postgres-account.ts), which must
 * traverse every directory above its data directory and above its binaries. A checkout in a
 * folder only root may enter (`/root/...`, `mktemp -d`) has both out of its reach: then the
 * cluster goes to a directory derived from the data directory's real path under a reachable
 * root (the OS temp directory), the same one on every start, and the binaries are copied there
 * once. The user's own folders are never opened up.
 */
import { createHash, randomBytes } from 'crypto';
import { existsSync, readFileSync, realpathSync } from 'fs';
import { chmod, cp, lstat, mkdir, rename, rm, stat } from 'fs/promises';
import { tmpdir } from 'os';
import * as path from 'path';
import { POSTGRES_USER } from './constants';
import type { PostgresAccount } from './postgres-account';

/** The first directory on the way to `target` that `account` cannot pass through, with its mode. */
export async function firstBlockingDirectory(
  target: string,
  account: PostgresAccount,
): Promise<{ dir: string; mode: number } | undefined> {
  // The path as written and its real path: a symlink on the way is followed by the kernel too.
  for (const file of new Set([path.resolve(target), realpathOfExisting(target)])) {
    const dirs: string[] = [];
    for (let dir = path.dirname(file); ; dir = path.dirname(dir)) {
      dirs.unshift(dir);
      if (dir === path.dirname(dir)) break;
    }
    for (const dir of dirs) {
      const info = await stat(dir);
      const bit =
        info.uid === account.uid ? 0o100 : account.groups.includes(info.gid) ? 0o010 : 0o001;
      if ((info.mode & bit) === 0) return { dir, mode: info.mode & 0o777 };
    }
  }
  return undefined;
}

export interface Placement {
  dataDir: string;
  installDir: string;
}

/**
 * The data directory and installation PostgreSQL will use as `account`: the requested ones when
 * it can reach them; otherwise places under `reachableRoot`, stable for a given data directory
 * (its real path, hashed), so a restarted demo finds its data again.
 */
export async function placeForAccount(
  requested: Placement,
  account: PostgresAccount,
  reachableRoot: string | undefined,
  log: (line: string) => void,
): Promise<Placement> {
  const blockedData = await firstBlockingDirectory(requested.dataDir, account);
  const blockedInstall = await firstBlockingDirectory(
    path.join(requested.installDir, 'bin', 'postgres'),
    account,
  );
  if (!blockedData && !blockedInstall) return requested;

  const root = await reachableDirectory(
    reachableRoot ?? path.join(tmpdir(), 'nestjs-pg-idempotency-postgres'),
    account,
  );
  let { dataDir, installDir } = requested;
  if (blockedData) {
    const id = createHash('sha256')
      .update(realpathOfExisting(requested.dataDir))
      .digest('hex')
      .slice(0, 12);
    dataDir = path.join(root, `${path.basename(requested.dataDir)}-${id}`);
    log(
      `the "${POSTGRES_USER}" user cannot reach ${requested.dataDir} (${blockedData.dir} has mode ` +
        `${octal(blockedData.mode)}): the cluster lives in ${dataDir} instead`,
    );
  }
  if (blockedInstall) installDir = await reachableCopy(requested.installDir, root, log);
  return { dataDir, installDir };
}

/**
 * A copy of the installation under `root`, made once per package version (60 MB, well under a
 * second): into a temporary name first, then renamed, so a concurrent start never runs a half copy.
 */
async function reachableCopy(
  installDir: string,
  root: string,
  log: (line: string) => void,
): Promise<string> {
  const target = path.join(root, `binaries-${installationVersion(installDir)}`);
  if (existsSync(path.join(target, 'bin', 'postgres'))) return target;
  const started = Date.now();
  const partial = `${target}.partial-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    await cp(installDir, partial, { recursive: true, verbatimSymlinks: true });
    await rename(partial, target);
  } catch (error) {
    // Another process finished the same copy first: use that one.
    if (!existsSync(path.join(target, 'bin', 'postgres'))) throw error;
  } finally {
    await rm(partial, { recursive: true, force: true });
  }
  log(
    `copied the PostgreSQL binaries to ${target} in ${Date.now() - started} ms (the "${POSTGRES_USER}" user cannot reach ${installDir})`,
  );
  return target;
}

/** `<package name>-<version>` of the installation's package, or a hash of its path when unknown. */
function installationVersion(installDir: string): string {
  try {
    const manifest = JSON.parse(
      readFileSync(path.join(installDir, '..', 'package.json'), 'utf8'),
    ) as {
      name?: string;
      version?: string;
    };
    if (manifest.name && manifest.version)
      return `${manifest.name.replace(/^@/, '').replace(/\//g, '-')}-${manifest.version}`;
  } catch {
    // fall through
  }
  return createHash('sha256').update(realpathOfExisting(installDir)).digest('hex').slice(0, 12);
}

/**
 * Creates `dir` (mode 0755) or checks the one there: a real directory of ours that nobody else
 * can write to, so nothing another local user placed in a shared temp directory is trusted.
 */
async function reachableDirectory(dir: string, account: PostgresAccount): Promise<string> {
  await mkdir(dir, { recursive: true, mode: 0o755 });
  const info = await lstat(dir);
  const uid = process.getuid?.();
  if (!info.isDirectory() || info.uid !== uid || (info.mode & 0o022) !== 0) {
    throw new Error(
      `${dir} must be a directory owned by this user and writable by nobody else to hold the embedded PostgreSQL; ` +
        'remove it, or set EMBEDDED_PG_DIR to a directory the "postgres" user can reach',
    );
  }
  if ((info.mode & 0o755) !== 0o755) await chmod(dir, 0o755);
  const blocked = await firstBlockingDirectory(path.join(dir, 'x'), account);
  if (blocked) {
    throw new Error(
      `The "${POSTGRES_USER}" user cannot reach ${dir} either (${blocked.dir} has mode ${octal(blocked.mode)}): ` +
        'set EMBEDDED_PG_DIR to a directory it can reach',
    );
  }
  return dir;
}

/** The real path of `file`, or of its deepest existing ancestor with the rest appended. */
function realpathOfExisting(file: string): string {
  const absolute = path.resolve(file);
  try {
    return realpathSync(absolute);
  } catch {
    const parent = path.dirname(absolute);
    return parent === absolute
      ? absolute
      : path.join(realpathOfExisting(parent), path.basename(absolute));
  }
}

function octal(mode: number): string {
  return mode.toString(8).padStart(4, '0');
}
