import { type ChildProcess, spawn } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { Client } from 'pg';
import { findFreePort } from '#tools/embedded-postgres';

const HOW_TO_INSTALL =
  'install it (apt-get install -y pgbouncer) or point PGBOUNCER_BIN at the binary';

/** The pgbouncer binary: `PGBOUNCER_BIN`, else the PATH, else where Debian puts it (/usr/sbin). */
export function findPgBouncer(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const dirs = [
    ...(env.PATH ?? '').split(delimiter),
    '/usr/sbin',
    '/usr/local/sbin',
    '/usr/local/bin',
  ];
  const candidates = env.PGBOUNCER_BIN
    ? [env.PGBOUNCER_BIN]
    : dirs.filter((dir) => dir !== '').map((dir) => join(dir, 'pgbouncer'));
  return candidates.find((path) => {
    try {
      accessSync(path, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/**
 * `describe` when a pgbouncer binary is installed, else `describe.skip` with the reason and how
 * to run it in its name (as the RabbitMQ suites do); with `REQUIRE_PGBOUNCER=1` (CI) a missing
 * binary fails the suite instead.
 */
export function describeWithPgBouncer(name: string, suite: () => void): void {
  if (findPgBouncer()) {
    describe(name, suite);
    return;
  }
  const reason = 'no pgbouncer binary (PGBOUNCER_BIN, PATH, /usr/sbin)';
  if (process.env.REQUIRE_PGBOUNCER === '1') {
    describe(name, () => {
      it('needs PgBouncer', () => {
        throw new Error(`REQUIRE_PGBOUNCER=1 but ${reason}: ${HOW_TO_INSTALL}`);
      });
    });
    return;
  }
  console.warn(
    `${reason}: the PgBouncer suite is SKIPPED. To run it, ${HOW_TO_INSTALL}; set REQUIRE_PGBOUNCER=1 to fail instead.`,
  );
  describe.skip(`${name} [SKIPPED: ${reason}; to run it, ${HOW_TO_INSTALL}]`, suite);
}

export interface PgBouncerSettings {
  /** Server connections per database and user: fewer than the app's pool, so sessions change hands. */
  poolSize: number;
  /** After a failed server login, how long PgBouncer opens no server connection (its default: 15). */
  serverLoginRetrySeconds?: number;
}

/** One statistics row of `SHOW STATS` (the counters this suite reads). */
export interface PgBouncerStats {
  totalXactCount: number;
  totalQueryCount: number;
}

/**
 * A PgBouncer of the test's own, in transaction mode, in front of the PostgreSQL at
 * `serverUrl`: a generated ini file and user list in a temporary directory, a free port on
 * 127.0.0.1, no Unix socket, logging to stderr (kept in `logs`). The user list holds the
 * server's credentials, so clients authenticate with the very URL they would use without it,
 * and PgBouncer logs in to the server with them. Never the machine's pgbouncer service.
 */
export class PgBouncer {
  readonly logs: string[] = [];
  private exited?: Promise<void>;

  private constructor(
    private readonly child: ChildProcess,
    private readonly dir: string,
    readonly port: number,
    private readonly server: URL,
  ) {}

  static async start(serverUrl: string, settings: PgBouncerSettings): Promise<PgBouncer> {
    const binary = findPgBouncer();
    if (!binary) throw new Error(`no pgbouncer binary: ${HOW_TO_INSTALL}`);
    const server = new URL(serverUrl);
    const user = decodeURIComponent(server.username);
    const password = decodeURIComponent(server.password);
    const database = server.pathname.slice(1);
    if (!user || !database)
      throw new Error(`PgBouncer: the server URL names no user or database: ${server.origin}`);
    const port = await findFreePort();
    const dir = mkdtempSync(join(tmpdir(), 'pgbouncer-test-'));
    const quote = (value: string) => `"${value.replace(/"/g, '""')}"`;
    writeFileSync(join(dir, 'userlist.txt'), `${quote(user)} ${quote(password)}\n`, {
      mode: 0o600,
    });
    writeFileSync(
      join(dir, 'pgbouncer.ini'),
      [
        '[databases]',
        `${database} = host=${server.hostname.replace(/^\[|\]$/g, '')} port=${server.port || 5432} dbname=${database}`,
        '[pgbouncer]',
        'listen_addr = 127.0.0.1',
        `listen_port = ${port}`,
        'unix_socket_dir =',
        // Without a password the server trusts its clients; so does PgBouncer then.
        `auth_type = ${password ? 'scram-sha-256' : 'trust'}`,
        `auth_file = ${join(dir, 'userlist.txt')}`,
        `admin_users = ${user}`,
        'pool_mode = transaction',
        `default_pool_size = ${settings.poolSize}`,
        ...(settings.serverLoginRetrySeconds === undefined
          ? []
          : [`server_login_retry = ${settings.serverLoginRetrySeconds}`]),
        'max_client_conn = 200',
        'ignore_startup_parameters = extra_float_digits',
        'logfile =',
        'pidfile =',
        '',
      ].join('\n'),
      { mode: 0o600 },
    );
    // PgBouncer refuses to run as root; -u makes it drop to another user once its files are read.
    const asUser = process.getuid?.() === 0 ? ['-u', process.env.PGBOUNCER_USER || 'postgres'] : [];
    const child = spawn(binary, [...asUser, join(dir, 'pgbouncer.ini')], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const bouncer = new PgBouncer(child, dir, port, server);
    child.stdout?.on('data', (chunk: Buffer) => bouncer.logs.push(chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => bouncer.logs.push(chunk.toString()));
    bouncer.exited = new Promise((done) => child.once('exit', () => done()));
    // A worker that dies without afterAll must not leave a PgBouncer behind.
    process.once('exit', bouncer.killNow);
    try {
      await bouncer.waitUntilListening();
    } catch (error) {
      await bouncer.stop();
      throw error;
    }
    return bouncer;
  }

  /** The server's URL with PgBouncer's address: what the app connects to. */
  get url(): string {
    const url = new URL(this.server.toString());
    url.hostname = '127.0.0.1';
    url.port = String(this.port);
    return url.toString();
  }

  /** Runs a command of PgBouncer's admin console (`SHOW STATS`, `RECONNECT`, ...). */
  async admin<T = Record<string, unknown>>(command: string): Promise<T[]> {
    const url = new URL(this.url);
    url.pathname = '/pgbouncer';
    const client = new Client({ connectionString: url.toString() });
    await client.connect();
    try {
      return (await client.query(command)).rows as T[];
    } finally {
      await client.end();
    }
  }

  /**
   * `RECONNECT`: every server session is closed as it comes free, so each connection's next
   * transaction gets a new one. Sent once no server connection is logging in: PgBouncer drops
   * those at once and takes that for a failed login, and then refuses every client that finds no
   * server (FATAL 08P01 "server login has been failing") and opens none for `server_login_retry`
   * (15 s). Such a connection is left over from a burst of requests (PgBouncer opens one at a
   * time for its waiting clients, and finishes it after they were served); nothing else starts
   * one while the test waits.
   */
  async reconnect(): Promise<void> {
    const database = this.server.pathname.slice(1);
    const deadline = Date.now() + 10_000;
    for (;;) {
      const pools = await this.admin<{ database: string; sv_login: string }>('SHOW POOLS');
      const loggingIn = pools
        .filter((pool) => pool.database === database)
        .reduce((sum, pool) => sum + Number(pool.sv_login), 0);
      if (loggingIn === 0) break;
      if (Date.now() > deadline)
        throw new Error(`PgBouncer: ${loggingIn} server connection(s) still logging in after 10 s`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await this.admin('RECONNECT');
  }

  /** The database's counters since start: transactions and queries (round trips) pooled. */
  async stats(): Promise<PgBouncerStats> {
    const database = this.server.pathname.slice(1);
    const rows = await this.admin<{
      database: string;
      total_xact_count: string;
      total_query_count: string;
    }>('SHOW STATS');
    const row = rows.find((each) => each.database === database);
    return {
      totalXactCount: Number(row?.total_xact_count ?? 0),
      totalQueryCount: Number(row?.total_query_count ?? 0),
    };
  }

  async stop(): Promise<void> {
    process.removeListener('exit', this.killNow);
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.child.kill('SIGTERM'); // fast shutdown: its clients are gone by now
      await this.exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  private readonly killNow = (): void => {
    this.child.kill('SIGKILL');
  };

  private async waitUntilListening(): Promise<void> {
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      if (this.child.exitCode !== null)
        throw new Error(`pgbouncer exited during start:\n${this.logs.join('')}`);
      if (await accepts(this.port)) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(
      `pgbouncer did not listen on 127.0.0.1:${this.port} within 10 s:\n${this.logs.join('')}`,
    );
  }
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
