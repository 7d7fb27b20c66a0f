/**
 * Starting and stopping what a scenario runs against: an address (nothing to
 * start), a command, a redis-server with a persistence preset, or the
 * embedded demo server. Whatever is started runs in its own process group, so
 * a Ctrl-C at the terminal reaches the study first and the study stops the
 * servers in order (the interrupted run is recorded as such, not as a server
 * that went away), and a stop reaches a shell's children too. Whatever is
 * started also dies with the study, however the study ends (a pipe it holds
 * closes: see SUPERVISOR), and its output goes to a log file, never through
 * this process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, fstatSync, mkdtempSync, openSync, readdirSync, readSync, rmSync, writeFileSync } from 'node:fs';
import { constants as osConstants, tmpdir } from 'node:os';
import path from 'node:path';
import { CertificateError, makeCertificates, type Certificates } from '../certificates.js';
import { formatCpuList, pinnedArgv } from '../cpus.js';
import { startLocalCluster } from '../local-cluster.js';
import { canConnect, freePort } from '../ports.js';
import { respbenchArgv, spawnEmbedded } from '../serve/spawn.js';
import { redactCommandLine } from '../secrets.js';
import { describeTarget, REDIS_PRESETS, type TargetCredentials, type TargetSpec, type TargetTls } from './target-spec.js';

/** The target could not be started or never became ready. */
export class TargetError extends Error {
  constructor(
    message: string,
    /** The target as the detail CSV names it, placeholders expanded. */
    readonly description: string,
  ) {
    super(message);
    this.name = 'TargetError';
  }
}

export interface StartedTarget {
  host: string;
  port: number;
  /** The target column of the detail CSV: a command as it ran, {port}/{dir} expanded. */
  description: string;
  /** The log file its output went to, if it was started. */
  log: string | null;
  /** A unix socket to measure over instead of host:port. */
  socket?: string | null;
  /** TLS to host:port, with what to trust. */
  tls?: TargetTls | null;
  /** A Redis Cluster: runs against it go with --cluster (host:port is a seed). */
  cluster?: boolean;
  /** Stops what was started (nothing for an address) and removes its data directory. */
  stop(): Promise<void>;
  /** Immediate SIGKILL of anything started, for a second Ctrl-C. */
  kill(): void;
  /** Why the server is gone, if it exited by itself. */
  exitReason(): string | null;
}

/** The last lines of a target's log file, to explain why it did not start. */
function lastLines(log: string | null, n = 3): string {
  if (!log) return '';
  let text = '';
  try {
    const fd = openSync(log, 'r');
    try {
      const size = fstatSync(fd).size;
      const buf = Buffer.alloc(Math.min(size, 4000));
      readSync(fd, buf, 0, buf.length, size - buf.length);
      text = buf.toString('utf8');
    } finally {
      closeSync(fd);
    }
  } catch {
    return '';
  }
  return text.trim().split('\n').slice(-n).join(' | ').slice(-600);
}

/** "; its output is in LOG (last lines: ...)", or nothing without a log. */
function logNote(log: string | null): string {
  if (!log) return '';
  const said = lastLines(log);
  return `; its output is in ${log}${said ? ` (last lines: ${said})` : ''}`;
}

/**
 * Data directories are named after the study that made them
 * (`respbench-study-<pid>-...`), so the next study can tell a dead study's
 * leftovers (killed with SIGKILL, say) from a live one's and remove them.
 */
const DATA_DIR_PREFIX = 'respbench-study-';

function makeDataDir(label: string): string {
  return mkdtempSync(path.join(tmpdir(), `${DATA_DIR_PREFIX}${process.pid}-${label ? `${label}-` : ''}`));
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Removes the data directories of studies that are no longer running; returns how many. */
export function removeStaleDataDirs(dir = tmpdir()): number {
  let removed = 0;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return 0;
  }
  for (const name of names) {
    const m = new RegExp(`^${DATA_DIR_PREFIX}(\\d+)-`).exec(name);
    if (!m) continue;
    const pid = Number(m[1]);
    if (pid === process.pid || pidAlive(pid)) continue;
    try {
      rmSync(path.join(dir, name), { recursive: true, force: true });
      removed++;
    } catch {
      /* not ours to remove after all (permissions): leave it */
    }
  }
  return removed;
}

/**
 * What runs a started command: a small /bin/sh that holds the read end of a
 * pipe from the study on fd 0 and, when that pipe closes — the study ended,
 * however it ended, SIGKILL included — kills its whole process group (the
 * server, and a shell command's children). It runs the server in the
 * background with stdin from /dev/null, waits for it (a SIGTERM to the group
 * reaches the server; the supervisor waits for it to finish its shutdown),
 * and exits with its status (128 + n when a signal ended it). A program that
 * is not there is reported as status 127 with NOT_FOUND on stderr.
 */
const SUPERVISOR = `
command -v "$1" >/dev/null 2>&1 || { echo "respbench: cannot run $1: not found" >&2; exit 127; }
exec 3<&0 </dev/null
( trap '' INT TERM HUP; read -r line <&3; kill -9 0 ) &
watcher=$!
exec 3<&-
trap : INT TERM HUP
"$@" &
pid=$!
while :; do
  wait "$pid"; status=$?
  kill -0 "$pid" 2>/dev/null || break
done
kill -9 "$watcher" 2>/dev/null
exit "$status"
`;
const NOT_FOUND = /respbench: cannot run .*: not found/;

function shellQuote(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

function substitute(text: string, vars: Record<string, string>, quote: boolean): string {
  return text.replace(/\{(port|dir|respbench|host)\}/g, (_, name: string) => {
    if (name === 'respbench') return respbenchArgv().map(quote ? shellQuote : (s) => s).join(' ');
    return quote ? shellQuote(vars[name]) : vars[name];
  });
}

interface Launch {
  argv: string[];
  /** Run through `sh -c` (a command line) rather than directly. */
  shell: boolean;
  host: string;
  port: number;
  cwd?: string;
  env?: Record<string, string>;
  readyTimeoutMs: number;
  stopTimeoutMs: number;
  /** Temp directory to remove after the stop. */
  dir: string | null;
  /** Where the server's stdout and stderr go (never through the engine's event loop); null: nowhere. */
  log: string | null;
  /** For messages: `redis-server (preset aof_always)`, `the start command "..."`. */
  what: string;
  /** The target column of the detail CSV: the command as it ran, {port}/{dir} expanded. */
  description: string;
  /** `cpus:`: run the server on these CPUs (taskset -c). */
  cpus?: number[];
}

/** A child's stdout/stderr: the log file opened for appending, or nowhere when it cannot be. */
function openLog(log: string | null): number | 'ignore' {
  if (!log) return 'ignore';
  try {
    return openSync(log, 'a');
  } catch {
    return 'ignore';
  }
}

/**
 * A started command in its own process group under the supervisor (see
 * SUPERVISOR), and how it ends: SIGTERM to the group, SIGKILL after the
 * stop timeout, the data directory removed.
 */
class GroupChild {
  readonly program: string;
  /** Why it ended: null while it runs. */
  private ended: string | null = null;
  private notFoundStatus = false;
  private readonly child: ChildProcess;
  private readonly exited: Promise<void>;
  private stopping: Promise<void> | null = null;

  constructor(private readonly l: Launch) {
    const command = l.shell ? ['/bin/sh', '-c', l.argv.join(' ')] : l.argv;
    this.program = command[0];
    // cpus: the server (and a shell command's children) on those CPUs; the supervisor stays unpinned.
    const argv = l.cpus ? pinnedArgv(l.cpus, command) : command;
    const out = openLog(l.log);
    try {
      // The child's stdout/stderr are the log file's descriptor: what the
      // server writes never passes through this process (and its engine).
      this.child = spawn('/bin/sh', ['-c', SUPERVISOR, 'respbench-supervisor', ...argv], {
        cwd: l.cwd,
        env: { ...process.env, ...l.env },
        stdio: ['pipe', out, out],
        detached: true,
      });
    } finally {
      if (typeof out === 'number') closeSync(out);
    }
    // The pipe is only there to close when this process ends; nothing is written to it.
    this.child.stdin?.on('error', () => undefined);
    this.exited = new Promise<void>((resolve) => {
      this.child.once('exit', (code, sig) => {
        if (code === 127 && NOT_FOUND.test(lastLines(l.log, 1))) this.notFoundStatus = true;
        this.ended = sig
          ? `killed by ${sig}`
          : code === 0
            ? 'exited with status 0 (a start command must stay in the foreground, e.g. no --daemonize yes)'
            : code !== null && code > 128 && signalName(code - 128)
              ? `killed by ${signalName(code - 128)}`
              : `exited with status ${code}`;
        resolve();
      });
      this.child.once('error', (err) => {
        this.ended = err.message;
        resolve();
      });
    });
  }

  alive(): boolean {
    return this.ended === null;
  }

  notFound(): boolean {
    return this.notFoundStatus;
  }

  private signalGroup(sig: NodeJS.Signals): void {
    if (this.child.pid === undefined || !this.alive()) return;
    try {
      process.kill(-this.child.pid, sig);
    } catch {
      try {
        this.child.kill(sig);
      } catch {
        /* already gone */
      }
    }
  }

  private cleanup(): void {
    this.child.stdin?.destroy();
    try {
      if (this.l.dir) rmSync(this.l.dir, { recursive: true, force: true });
    } catch {
      /* a server killed a moment ago may still be writing: the next study removes it */
    }
  }

  stop(): Promise<void> {
    this.stopping ??= (async () => {
      if (this.alive()) {
        this.signalGroup('SIGTERM');
        const timer = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), this.l.stopTimeoutMs).unref());
        if ((await Promise.race([this.exited.then(() => 'exited' as const), timer])) === 'timeout') {
          this.signalGroup('SIGKILL');
          await this.exited;
        }
      }
      // A shell's children may outlive it: make sure the whole group is gone.
      if (this.child.pid !== undefined) {
        try {
          process.kill(-this.child.pid, 'SIGKILL');
        } catch {
          /* group already empty */
        }
      }
      this.cleanup();
    })();
    return this.stopping;
  }

  kill(): void {
    this.signalGroup('SIGKILL');
    this.cleanup();
  }

  asTarget(): StartedTarget {
    return {
      host: this.l.host,
      port: this.l.port,
      description: this.l.description,
      log: this.l.log,
      stop: () => this.stop(),
      kill: () => this.kill(),
      exitReason: () => this.exitReason(),
    };
  }

  exitReason(): string | null {
    return this.ended;
  }
}

function signalName(n: number): string | undefined {
  return Object.entries(osConstants.signals).find(([, v]) => v === n)?.[0];
}

/** Polls the port until it accepts connections; stops the child and throws TargetError if it never does. */
async function waitUntilReady(l: Launch, c: GroupChild, signal: AbortSignal | undefined): Promise<StartedTarget> {
  const deadline = Date.now() + l.readyTimeoutMs;
  const fail = (message: string) => new TargetError(message, l.description);
  for (;;) {
    if (!c.alive()) {
      await c.stop();
      if (c.notFound()) {
        throw fail(`${l.what}: ${c.program} not found${c.program === 'redis-server' ? " (install Debian's redis-server package, or give target.binary)" : ''}`);
      }
      throw fail(`${l.what} ${c.exitReason()} before opening port ${l.port}${logNote(l.log)}`);
    }
    if (signal?.aborted) {
      await c.stop();
      throw fail(`${l.what}: interrupted while waiting for port ${l.port}`);
    }
    if (await canConnect(l.host, l.port)) return c.asTarget();
    if (Date.now() > deadline) {
      // What it said while it was starting, not what the stop makes it say.
      const note = logNote(l.log);
      await c.stop();
      const secs = l.readyTimeoutMs / 1000;
      throw fail(
        `${l.what} did not open port ${l.port} on ${l.host} within ${secs} s (if it needs longer, give the target readyTimeout, e.g. readyTimeout: ${Math.max(30, Math.ceil(secs * 3))}s)${note}`,
      );
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function launch(l: Launch, signal: AbortSignal | undefined): Promise<StartedTarget> {
  // With a fixed port, something already listening there would pass the
  // ready check and take the load meant for the server we start.
  if (await canConnect(l.host, l.port)) {
    throw new TargetError(`${l.what}: port ${l.port} on ${l.host} is already in use (stop what listens there, or put {port} in the command for a free one)`, l.description);
  }
  return waitUntilReady(l, new GroupChild(l), signal);
}

/** The demo server, started the way `--embedded` starts it. */
async function startEmbedded(spec: TargetSpec, signal: AbortSignal | undefined): Promise<StartedTarget> {
  try {
    const server = await spawnEmbedded(signal);
    return { host: '127.0.0.1', port: server.port, description: describeTarget(spec), log: null, stop: server.stop, kill: server.kill, exitReason: server.exitReason };
  } catch (err) {
    throw new TargetError((err as Error).message, describeTarget(spec));
  }
}

/** A CA and a certificate for a `tls: true` redis target, in its data directory (removed with it). */
function targetCertificates(dir: string, description: string): Certificates {
  try {
    return makeCertificates(dir);
  } catch (err) {
    if (err instanceof CertificateError) throw new TargetError(`${err.message} (a tls: true redis target)`, description);
    throw err;
  }
}

/**
 * A redis preset with `pass:` (and `user:`): a config file in the server's
 * data directory (readable by its owner only) sets requirepass, or an ACL
 * user with every right, so the password is in no command line `ps` shows.
 * Returns the arguments that name it (none without a password).
 */
function writeCredentialsConf(dir: string, c: TargetCredentials | undefined): string[] {
  if (!c?.password) return [];
  const quoted = (t: string) => `"${t.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
  const line = c.user === null ? `requirepass ${quoted(c.password)}` : `user ${quoted(c.user)} on ${quoted(`>${c.password}`)} ~* &* +@all`;
  const file = path.join(dir, 'respbench-auth.conf');
  writeFileSync(file, `${line}\n`, { mode: 0o600 });
  return [file];
}

/**
 * A local Redis Cluster (the project's one launcher, local-cluster.ts): each
 * node a redis-server launched as a redis target is (supervised, its output
 * in the study's log, its data directory named after the study), with the
 * persistence preset; ready when every node says cluster_state:ok. Stopping
 * (or a failure on the way) stops every node and removes every data
 * directory. With `tls: true` every node is TLS only, on one certificate the
 * study makes, and redis-cli goes over TLS too.
 */
async function startCluster(spec: Extract<TargetSpec, { kind: 'redis_cluster' }>, signal: AbortSignal | undefined, log: string | null): Promise<StartedTarget> {
  const description = describeTarget(spec);
  let cluster;
  try {
    cluster = await startLocalCluster({
      primaries: spec.primaries,
      replicas: spec.replicas,
      binary: spec.binary,
      tls: spec.tls ? 'only' : null,
      config: [...REDIS_PRESETS[spec.preset]],
      makeDir: (purpose) => makeDataDir(purpose === 'node' ? `${spec.preset}-cluster` : 'cluster-tls'),
      readyTimeoutMs: spec.readyTimeoutMs,
      timeoutHint: ' (give the target a longer readyTimeout)',
      signal,
      startNode: async (node) => {
        const started = await launch(
          {
            argv: node.argv,
            shell: false,
            host: '127.0.0.1',
            port: node.port,
            readyTimeoutMs: node.readyTimeoutMs,
            stopTimeoutMs: spec.stopTimeoutMs,
            dir: node.dir,
            log,
            description,
            what: `redis-server (cluster node ${node.index + 1}, preset ${spec.preset}${node.tls ? ', TLS' : ''})`,
          },
          signal,
        );
        return { stop: started.stop, kill: started.kill, exitReason: started.exitReason };
      },
    });
  } catch (err) {
    if (err instanceof TargetError) throw err;
    throw new TargetError(`redis cluster: ${(err as Error).message}`, description);
  }
  const addresses = cluster.nodes.map((n) => `127.0.0.1:${n.port}`);
  return {
    host: '127.0.0.1',
    port: cluster.nodes[0].port,
    cluster: true,
    ...(cluster.certificates ? { tls: { cacert: cluster.certificates.ca } } : {}),
    description,
    log,
    stop: cluster.stop,
    kill: cluster.kill,
    exitReason: () => {
      for (const [i, n] of cluster.nodes.entries()) {
        const why = n.process.exitReason();
        if (why !== null) return `cluster node ${addresses[i]}: ${why}`;
      }
      return null;
    },
  };
}

export interface StartOptions {
  /** Abandons a start in progress. */
  signal?: AbortSignal;
  /** The file a started server's stdout and stderr go to (created or appended). */
  log?: string;
}

/** Starts the target (or checks nothing, for an address) and resolves once its port accepts connections. */
export async function startTarget(spec: TargetSpec, options: StartOptions = {}): Promise<StartedTarget> {
  const { signal } = options;
  const log = options.log ?? null;
  switch (spec.kind) {
    case 'address':
      return { host: spec.host, port: spec.port, socket: spec.socket ?? null, tls: spec.tls ?? null, ...(spec.cluster ? { cluster: true } : {}), description: describeTarget(spec), log: null, stop: async () => undefined, kill: () => undefined, exitReason: () => null };
    case 'embedded':
      return startEmbedded(spec, signal);
    case 'redis': {
      const port = await freePort();
      const dir = makeDataDir(spec.preset);
      const conf = writeCredentialsConf(dir, spec.credentials);
      let transport: string[] = [];
      let extra: Pick<StartedTarget, 'socket' | 'tls'> = {};
      if (spec.tls) {
        let files;
        try {
          files = targetCertificates(dir, describeTarget(spec));
        } catch (err) {
          rmSync(dir, { recursive: true, force: true });
          throw err;
        }
        // The TLS port is the one measured (and waited for); no plain port.
        transport = ['--port', '0', '--tls-port', String(port), '--tls-cert-file', files.cert, '--tls-key-file', files.key, '--tls-ca-cert-file', files.ca, '--tls-auth-clients', 'no'];
        extra = { tls: { cacert: files.ca } };
      } else if (spec.socket) {
        const socket = path.join(dir, 'redis.sock');
        transport = ['--unixsocket', socket, '--unixsocketperm', '700'];
        extra = { socket };
      }
      const started = await launch(
        {
          argv: [spec.binary, ...conf, '--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--daemonize', 'no', ...transport, ...REDIS_PRESETS[spec.preset], ...spec.args],
          shell: false,
          host: '127.0.0.1',
          port,
          readyTimeoutMs: spec.readyTimeoutMs,
          stopTimeoutMs: spec.stopTimeoutMs,
          dir,
          log,
          description: describeTarget(spec),
          cpus: spec.cpus,
          what: `redis-server (preset ${spec.preset}${spec.tls ? ', TLS' : ''}${spec.socket ? ', unix socket' : ''})`,
        },
        signal,
      );
      return { ...started, ...extra };
    }
    case 'redis_cluster':
      return startCluster(spec, signal, log);
    case 'command': {
      const port = spec.port ?? (await freePort(spec.host));
      const text = typeof spec.command === 'string' ? spec.command : spec.command.join(' ');
      const dir = text.includes('{dir}') ? makeDataDir('') : null;
      const vars = { port: String(port), dir: dir ?? '', host: spec.host };
      const argv =
        typeof spec.command === 'string'
          ? [substitute(spec.command, vars, true)]
          : spec.command.flatMap((a) => (a === '{respbench}' ? respbenchArgv() : [substitute(a, vars, false)]));
      const expanded = typeof spec.command === 'string' ? argv[0] : argv.map(shellQuote).join(' ');
      return launch(
        {
          argv,
          shell: typeof spec.command === 'string',
          host: spec.host,
          port,
          cwd: spec.cwd,
          env: spec.env,
          readyTimeoutMs: spec.readyTimeoutMs,
          stopTimeoutMs: spec.stopTimeoutMs,
          dir,
          log,
          // Shown in messages and written to the reports: never with the password it may start the server with.
          what: `the start command "${redactCommandLine(expanded, spec.credentials?.password)}"`,
          description: `command: ${redactCommandLine(expanded, spec.credentials?.password)}${spec.cpus ? ` (cpus ${formatCpuList(spec.cpus)})` : ''}`,
          cpus: spec.cpus,
        },
        signal,
      );
    }
  }
}
