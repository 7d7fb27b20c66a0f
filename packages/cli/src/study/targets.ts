/**
 * Starting and stopping what a scenario runs against: an address (nothing to
 * start), a command, a redis-server with a persistence preset, or the
 * embedded demo server. Whatever is started runs in its own process group, so
 * a Ctrl-C at the terminal reaches the study first and the study stops the
 * servers in order (the interrupted run is recorded as such, not as a server
 * that went away), and a stop reaches a shell's children too.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { respbenchArgv, spawnEmbedded } from '../serve/spawn.js';
import { REDIS_PRESETS, type TargetSpec, type TargetTls } from './spec.js';

/** The target could not be started or never became ready. */
export class TargetError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TargetError';
  }
}

export interface StartedTarget {
  host: string;
  port: number;
  /** A unix socket to measure over instead of host:port. */
  socket?: string | null;
  /** TLS to host:port, with what to trust. */
  tls?: TargetTls | null;
  /** Stops what was started (nothing for an address) and removes its data directory. */
  stop(): Promise<void>;
  /** Immediate SIGKILL of anything started, for a second Ctrl-C. */
  kill(): void;
  /** Why the server is gone, if it exited by itself. */
  exitReason(): string | null;
}

export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, host, () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

function canConnect(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host, port });
    const done = (ok: boolean) => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(1000, () => done(false));
    s.once('connect', () => done(true));
    s.once('error', () => done(false));
  });
}

/** Keeps the last few kB a child wrote, to explain why it did not start. */
class OutputTail {
  private text = '';

  attach(child: ChildProcess): void {
    const take = (chunk: Buffer) => {
      this.text = (this.text + chunk.toString('utf8')).slice(-4000);
    };
    child.stdout?.on('data', take);
    child.stderr?.on('data', take);
  }

  lastLines(n = 3): string {
    return this.text.trim().split('\n').slice(-n).join(' | ').slice(-600);
  }
}

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
  /** For messages: `redis-server (preset aof_always)`, `the start command "..."`. */
  what: string;
}

/**
 * A started command in its own process group, and how it ends: SIGTERM to
 * the group, SIGKILL after the stop timeout, the data directory removed.
 */
class GroupChild {
  readonly program: string;
  readonly tail = new OutputTail();
  /** Why it ended: null while it runs. */
  private ended: string | null = null;
  private spawnError: NodeJS.ErrnoException | null = null;
  private readonly child: ChildProcess;
  private readonly exited: Promise<void>;
  private stopping: Promise<void> | null = null;

  constructor(private readonly l: Launch) {
    const [program, ...args] = l.shell ? ['/bin/sh', '-c', l.argv.join(' ')] : l.argv;
    this.program = program;
    this.child = spawn(program, args, {
      cwd: l.cwd,
      env: { ...process.env, ...l.env },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    this.tail.attach(this.child);
    this.exited = new Promise<void>((resolve) => {
      this.child.once('exit', (code, sig) => {
        this.ended = sig
          ? `killed by ${sig}`
          : code === 0
            ? 'exited with status 0 (a start command must stay in the foreground, e.g. no --daemonize yes)'
            : `exited with status ${code}`;
        resolve();
      });
      this.child.once('error', (err) => {
        this.spawnError = err;
        this.ended = err.message;
        resolve();
      });
    });
  }

  alive(): boolean {
    return this.ended === null;
  }

  notFound(): boolean {
    return this.spawnError?.code === 'ENOENT';
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
    if (this.l.dir) rmSync(this.l.dir, { recursive: true, force: true });
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
    return { host: this.l.host, port: this.l.port, stop: () => this.stop(), kill: () => this.kill(), exitReason: () => this.exitReason() };
  }

  exitReason(): string | null {
    return this.ended;
  }
}

/** Polls the port until it accepts connections; stops the child and throws TargetError if it never does. */
async function waitUntilReady(l: Launch, c: GroupChild, signal: AbortSignal | undefined): Promise<StartedTarget> {
  const deadline = Date.now() + l.readyTimeoutMs;
  for (;;) {
    if (!c.alive()) {
      await c.stop();
      if (c.notFound()) {
        throw new TargetError(`${l.what}: ${c.program} not found${c.program === 'redis-server' ? " (install Debian's redis-server package, or give target.binary)" : ''}`);
      }
      const said = c.tail.lastLines();
      throw new TargetError(`${l.what} ${c.exitReason()} before opening port ${l.port}${said ? `: ${said}` : ''}`);
    }
    if (signal?.aborted) {
      await c.stop();
      throw new TargetError(`${l.what}: interrupted while waiting for port ${l.port}`);
    }
    if (await canConnect(l.host, l.port)) return c.asTarget();
    if (Date.now() > deadline) {
      await c.stop();
      const said = c.tail.lastLines();
      throw new TargetError(`${l.what} did not open port ${l.port} on ${l.host} within ${l.readyTimeoutMs / 1000} s${said ? ` (it said: ${said})` : ''}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function launch(l: Launch, signal: AbortSignal | undefined): Promise<StartedTarget> {
  // With a fixed port, something already listening there would pass the
  // ready check and take the load meant for the server we start.
  if (await canConnect(l.host, l.port)) {
    throw new TargetError(`${l.what}: port ${l.port} on ${l.host} is already in use (stop what listens there, or put {port} in the command for a free one)`);
  }
  return waitUntilReady(l, new GroupChild(l), signal);
}

/** The demo server, started the way `--embedded` starts it. */
async function startEmbedded(signal: AbortSignal | undefined): Promise<StartedTarget> {
  try {
    const server = await spawnEmbedded(signal);
    return { host: '127.0.0.1', port: server.port, stop: server.stop, kill: server.kill, exitReason: server.exitReason };
  } catch (err) {
    throw new TargetError((err as Error).message);
  }
}

/**
 * A CA and a server certificate for 127.0.0.1 and localhost signed by it,
 * made with openssl in `dir` (the server's data directory, removed with it)
 * for a `tls: true` redis target.
 */
function makeCertificates(dir: string): { ca: string; cert: string; key: string } {
  const run = (...args: string[]) => {
    const r = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' });
    if (r.error && (r.error as NodeJS.ErrnoException).code === 'ENOENT') throw new TargetError('openssl not found: a tls: true redis target makes its certificate with it (install the openssl package)');
    if (r.status !== 0) throw new TargetError(`openssl ${args[0]} failed while making the TLS certificate: ${(r.stderr ?? '').trim().split('\n').pop()}`);
  };
  run('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=respbench study CA');
  writeFileSync(path.join(dir, 'server.ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  run('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost');
  run('x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.pem', '-days', '2', '-extfile', 'server.ext');
  return { ca: path.join(dir, 'ca.pem'), cert: path.join(dir, 'server.pem'), key: path.join(dir, 'server.key') };
}

/** Starts the target (or checks nothing, for an address) and resolves once its port accepts connections. */
export async function startTarget(spec: TargetSpec, signal?: AbortSignal): Promise<StartedTarget> {
  switch (spec.kind) {
    case 'address':
      return { host: spec.host, port: spec.port, socket: spec.socket ?? null, tls: spec.tls ?? null, stop: async () => undefined, kill: () => undefined, exitReason: () => null };
    case 'embedded':
      return startEmbedded(signal);
    case 'redis': {
      const port = await freePort();
      const dir = mkdtempSync(path.join(tmpdir(), `respbench-study-${spec.preset}-`));
      let transport: string[] = [];
      let extra: Pick<StartedTarget, 'socket' | 'tls'> = {};
      if (spec.tls) {
        let files;
        try {
          files = makeCertificates(dir);
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
          argv: [spec.binary, '--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--daemonize', 'no', ...transport, ...REDIS_PRESETS[spec.preset], ...spec.args],
          shell: false,
          host: '127.0.0.1',
          port,
          readyTimeoutMs: spec.readyTimeoutMs,
          stopTimeoutMs: spec.stopTimeoutMs,
          dir,
          what: `redis-server (preset ${spec.preset}${spec.tls ? ', TLS' : ''}${spec.socket ? ', unix socket' : ''})`,
        },
        signal,
      );
      return { ...started, ...extra };
    }
    case 'command': {
      const port = spec.port ?? (await freePort(spec.host));
      const text = typeof spec.command === 'string' ? spec.command : spec.command.join(' ');
      const dir = text.includes('{dir}') ? mkdtempSync(path.join(tmpdir(), 'respbench-study-')) : null;
      const vars = { port: String(port), dir: dir ?? '', host: spec.host };
      const argv =
        typeof spec.command === 'string'
          ? [substitute(spec.command, vars, true)]
          : spec.command.flatMap((a) => (a === '{respbench}' ? respbenchArgv() : [substitute(a, vars, false)]));
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
          what: `the start command "${text}"`,
        },
        signal,
      );
    }
  }
}
