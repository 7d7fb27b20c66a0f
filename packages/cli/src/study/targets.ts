/**
 * Starting and stopping what a scenario runs against: an address (nothing to
 * start), a command, a redis-server with a persistence preset, or the
 * embedded demo server. Whatever is started runs in its own process group, so
 * a Ctrl-C at the terminal reaches the study first and the study stops the
 * servers in order (the interrupted run is recorded as such, not as a server
 * that went away), and a stop reaches a shell's children too.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { respbenchArgv, spawnEmbedded } from '../serve/spawn.js';
import { REDIS_PRESETS, type TargetSpec } from './spec.js';

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

/** A child in its own process group, and how to stop it: SIGTERM to the group, SIGKILL after the stop timeout. */
interface GroupChild {
  program: string;
  tail: OutputTail;
  started: StartedTarget;
  alive(): boolean;
  spawnError(): NodeJS.ErrnoException | null;
}

function spawnGroup(l: Launch): GroupChild {
  const [program, ...args] = l.shell ? ['/bin/sh', '-c', l.argv.join(' ')] : l.argv;
  const tail = new OutputTail();
  let exitReason: string | null = null;
  let spawnError: Error | null = null;
  const child = spawn(program, args, {
    cwd: l.cwd,
    env: { ...process.env, ...l.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  tail.attach(child);
  const exited = new Promise<void>((resolve) => {
    child.once('exit', (code, sig) => {
      exitReason = sig
        ? `killed by ${sig}`
        : code === 0
          ? 'exited with status 0 (a start command must stay in the foreground, e.g. no --daemonize yes)'
          : `exited with status ${code}`;
      resolve();
    });
    child.once('error', (err) => {
      spawnError = err;
      exitReason = err.message;
      resolve();
    });
  });
  const alive = () => exitReason === null;
  const signalGroup = (sig: NodeJS.Signals) => {
    if (child.pid === undefined || !alive()) return;
    try {
      process.kill(-child.pid, sig);
    } catch {
      try {
        child.kill(sig);
      } catch {
        /* already gone */
      }
    }
  };
  const cleanup = () => {
    if (l.dir) rmSync(l.dir, { recursive: true, force: true });
  };
  let stopping: Promise<void> | null = null;
  const stop = () => {
    stopping ??= (async () => {
      if (alive()) {
        signalGroup('SIGTERM');
        const timer = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), l.stopTimeoutMs).unref());
        if ((await Promise.race([exited.then(() => 'exited' as const), timer])) === 'timeout') {
          signalGroup('SIGKILL');
          await exited;
        }
      }
      // A shell's children may outlive it: make sure the whole group is gone.
      if (child.pid !== undefined) {
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {
          /* group already empty */
        }
      }
      cleanup();
    })();
    return stopping;
  };
  const started: StartedTarget = {
    host: l.host,
    port: l.port,
    stop,
    kill: () => {
      signalGroup('SIGKILL');
      cleanup();
    },
    exitReason: () => exitReason,
  };
  return { program, tail, started, alive, spawnError: () => spawnError as NodeJS.ErrnoException | null };
}

/** Polls the port until it accepts connections; stops the child and throws TargetError if it never does. */
async function waitUntilReady(l: Launch, c: GroupChild, signal: AbortSignal | undefined): Promise<StartedTarget> {
  const deadline = Date.now() + l.readyTimeoutMs;
  for (;;) {
    if (!c.alive()) {
      await c.started.stop();
      if (c.spawnError()?.code === 'ENOENT') {
        throw new TargetError(`${l.what}: ${c.program} not found${c.program === 'redis-server' ? " (install Debian's redis-server package, or give target.binary)" : ''}`);
      }
      const said = c.tail.lastLines();
      throw new TargetError(`${l.what} ${c.started.exitReason()} before opening port ${l.port}${said ? `: ${said}` : ''}`);
    }
    if (signal?.aborted) {
      await c.started.stop();
      throw new TargetError(`${l.what}: interrupted while waiting for port ${l.port}`);
    }
    if (await canConnect(l.host, l.port)) return c.started;
    if (Date.now() > deadline) {
      await c.started.stop();
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
  return waitUntilReady(l, spawnGroup(l), signal);
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

/** Starts the target (or checks nothing, for an address) and resolves once its port accepts connections. */
export async function startTarget(spec: TargetSpec, signal?: AbortSignal): Promise<StartedTarget> {
  switch (spec.kind) {
    case 'address':
      return { host: spec.host, port: spec.port, stop: async () => undefined, kill: () => undefined, exitReason: () => null };
    case 'embedded':
      return startEmbedded(signal);
    case 'redis': {
      const port = await freePort();
      const dir = mkdtempSync(path.join(tmpdir(), `respbench-study-${spec.preset}-`));
      return launch(
        {
          argv: [spec.binary, '--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--daemonize', 'no', ...REDIS_PRESETS[spec.preset], ...spec.args],
          shell: false,
          host: '127.0.0.1',
          port,
          readyTimeoutMs: spec.readyTimeoutMs,
          stopTimeoutMs: spec.stopTimeoutMs,
          dir,
          what: `redis-server (preset ${spec.preset})`,
        },
        signal,
      );
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
