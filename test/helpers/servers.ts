/**
 * Real servers for end-to-end tests: a redis-server (Debian's package) on a
 * free loopback port in a fresh temp directory, and the CLI run as a child
 * process. Every server started here is stopped by the test that started it,
 * and `liveChildren()` lets tests check nothing was left behind.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { canConnect, freePort } from '../../packages/cli/src/ports.js';
import { decodeHistograms } from '../../packages/cli/src/result-json.js';

import { CLI } from './paths.js';

export { CLI, REPO } from './paths.js';

/** A free loopback port: the same helper the study and the cluster launcher use. */
export { freePort };

export function waitForPort(port: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const attempt = () => {
      const s = net.connect({ host: '127.0.0.1', port });
      s.once('connect', () => {
        s.destroy();
        resolve();
      });
      s.once('error', () => {
        s.destroy();
        if (Date.now() > deadline) reject(new Error(`port ${port} did not open within ${timeoutMs} ms`));
        else setTimeout(attempt, 50);
      });
    };
    attempt();
  });
}

export interface RedisServer {
  port: number;
  dir: string;
  process: ChildProcess;
  /** redis-cli against this server; returns stdout trimmed. */
  cli(...args: string[]): string;
  stop(): Promise<void>;
}

/** Commands the server has run since it started or since CONFIG RESETSTAT (INFO stats): how a test sees a run get going. */
export function commandsProcessed(server: RedisServer): number {
  return Number(/total_commands_processed:(\d+)/.exec(server.cli('INFO', 'stats'))?.[1] ?? 0);
}

/** Calls per command as the server counted them (INFO commandstats): { get: calls, 'config|get': calls, … }. */
export function commandCalls(server: RedisServer): Record<string, number> {
  const out: Record<string, number> = {};
  for (const m of server.cli('INFO', 'commandstats').matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) out[m[1]] = Number(m[2]);
  return out;
}

/** Starts redis-server on a free port; extra args are config directives (`--appendonly yes`). */
export async function startRedis(extra: string[] = []): Promise<RedisServer> {
  const dir = mkdtempSync(path.join(tmpdir(), 'respbench-redis-'));
  const { port, child } = await redisOnFreePort(['--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no', '--enable-debug-command', 'yes', ...extra]);
  return {
    port,
    dir,
    process: child,
    cli: (...args: string[]) => {
      const r = spawnSync('redis-cli', ['-p', String(port), ...args], { encoding: 'utf8' });
      const out = r.stdout.trim();
      if (r.status !== 0 || /^(ERR|WRONGTYPE|NOAUTH|OOM) /.test(out)) throw new Error(`redis-cli ${args.join(' ')} failed: ${r.stderr}${out}`);
      return out;
    },
    stop: () => killAndRemove(child, dir),
  };
}

/**
 * redis-server with `args` on a port free when asked, listening on it itself. Files run side by side, so
 * that port can be another file's server by the time this one binds it: this one then exits while the port
 * answers, and it is started again on another port (3 starts). An exit with nothing on the port is the
 * arguments' fault, and said at once.
 */
async function redisOnFreePort(args: string[]): Promise<{ port: number; child: ChildProcess }> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const child = spawn('redis-server', ['--port', String(port), ...args], { stdio: 'ignore' });
    if (await listensOn(child, port)) return { port, child };
    if (!(await canConnect('127.0.0.1', port))) throw new Error(`redis-server ${args.join(' ')} exited (status ${child.exitCode}) before it listened on ${port}`);
    if (attempt === 3) throw new Error(`redis-server found its free port taken by another process in 3 starts (last ${port})`);
  }
}

/**
 * Waits until `child` listens on `port` itself (true), or exits first (false). Off Linux, where /proc does
 * not say who listens, a port that accepts is taken as its.
 */
async function listensOn(child: ChildProcess, port: number, timeoutMs = 10_000): Promise<boolean> {
  if (process.platform !== 'linux') {
    await waitForPort(port, timeoutMs);
    return true;
  }
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) return false;
    if (tcpSocketsOf(child.pid ?? 0).some((s) => s.localPort === port && s.state === LISTEN)) return true;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`redis-server did not listen on port ${port} within ${timeoutMs} ms`);
    }
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Kills a server a test started (SIGKILL) and removes its directory once it has exited. */
export function killAndRemove(child: ChildProcess, dir: string): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      rmSync(dir, { recursive: true, force: true });
      resolve();
    };
    if (child.exitCode !== null || child.signalCode !== null) return done();
    child.once('exit', done);
    child.kill('SIGKILL');
  });
}

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** A CLI process a test signals while it runs: `printed` resolves at its first stdout, `exited` when it ends (killed after `timeoutMs`). */
export function spawnCli(args: string[], timeoutMs = 30_000) {
  const child = spawn(process.execPath, [CLI, ...cliArgs(args)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let printed: () => void = () => undefined;
  const firstOutput = new Promise<void>((resolve) => (printed = resolve));
  child.stdout.on('data', (d) => {
    stdout += d;
    printed();
  });
  child.stderr.on('data', (d) => (stderr += d));
  const guard = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>((resolve) =>
    child.on('close', (code, signal) => {
      clearTimeout(guard);
      resolve({ code, signal, stdout, stderr });
    }),
  );
  return { child, printed: firstOutput, exited };
}

/**
 * The CLI's arguments for a test's engine name: `native/uring` and
 * `native/epoll` (helpers/engines.ts `ioEngines`) are the native engine on
 * that I/O backend (`--engine native --io uring`); other names pass as they are.
 */
export function cliArgs(args: string[]): string[] {
  const at = args.indexOf('--engine');
  const name = at >= 0 ? args[at + 1] : undefined;
  const io = name?.startsWith('native/') ? name.slice('native/'.length) : null;
  return io === null ? args : [...args.slice(0, at), '--engine', 'native', '--io', io, ...args.slice(at + 2)];
}

/** Runs the built CLI with args; kills it after `timeoutMs`. */
export function runCli(args: string[], timeoutMs = 60_000, env: NodeJS.ProcessEnv = process.env): Promise<CliRun> {
  return runProcess(process.execPath, [CLI, ...cliArgs(args)], timeoutMs, env);
}

/** Runs `command` with args, its output collected; kills it after `timeoutMs` (then `code` is null). */
export function runProcess(command: string, args: string[], timeoutMs = 60_000, env: NodeJS.ProcessEnv = process.env): Promise<CliRun> {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, ms: Date.now() - started });
    });
  });
}

/**
 * Runs the built CLI with args and sends it `signal` once its stdout matches
 * `when` (a run that goes on until interrupted: -l, -I); kills it after
 * `timeoutMs` if it never does or does not end.
 */
export function runCliUntil(args: string[], when: RegExp, signal: NodeJS.Signals = 'SIGINT', timeoutMs = 30_000): Promise<CliRun> {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let sent = false;
    child.stdout.on('data', (d) => {
      stdout += d;
      if (!sent && when.test(stdout)) {
        sent = true;
        child.kill(signal);
      }
    });
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, ms: Date.now() - started });
    });
  });
}

/** A result's JSON text (respbench --json, a --json-file) parsed, histograms decoded to their bucket lists (either file form). */
export function parseResult(text: string, what = 'stdout'): any {
  return decodeHistograms(JSON.parse(text), what);
}

/** Runs the CLI with --json (in `env`, default this process's) and parses the result (parseResult). */
export async function runJson(args: string[], timeoutMs = 60_000, env?: NodeJS.ProcessEnv): Promise<{ run: CliRun; result: any }> {
  const run = await runCli([...args, '--json'], timeoutMs, env);
  let result: any = null;
  try {
    result = parseResult(run.stdout);
  } catch {
    throw new Error(`no JSON from respbench ${args.join(' ')} (exit ${run.code}): ${run.stderr}${run.stdout}`);
  }
  return { run, result };
}

/**
 * Processes this test file started (directly or through the CLI, a study, a
 * cluster launcher) whose command line mentions `needle`, for orphan checks.
 * Another file's processes running beside this one are not listed
 * (helpers/file-sandbox.ts).
 */
export function liveProcesses(needle: string): string[] {
  const r = spawnSync('ps', ['-eo', 'pid,args'], { encoding: 'utf8' });
  return r.stdout.split('\n').filter((l) => l.includes(needle) && !l.includes('ps -eo') && startedByThisFile(Number(l.trim().split(/\s+/)[0])));
}

/**
 * Whether process `pid` belongs to this file's sandbox: its environment
 * names the sandbox, or it works inside it (redis-server overwrites its
 * environment with its title, and changes into its `--dir`). Without a
 * sandbox (a file run on its own outside the suite's config) every process
 * counts, as it did when files ran one at a time.
 */
function startedByThisFile(pid: number): boolean {
  const sandbox = process.env.RESPBENCH_TEST_SANDBOX;
  if (!sandbox || process.platform !== 'linux') return true;
  try {
    const cwd = readlinkSync(`/proc/${pid}/cwd`);
    if (cwd === sandbox || cwd.startsWith(`${sandbox}/`)) return true;
  } catch {
    // Gone, or not ours to read: try the environment.
  }
  try {
    return readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').includes(`RESPBENCH_TEST_SANDBOX=${sandbox}`);
  } catch {
    return false;
  }
}

/** Pids of this file's redis-server processes in cluster mode now (its clusters' and its studies'; liveProcesses). */
export function clusterNodePids(): Set<number> {
  return new Set(liveProcesses('[cluster]').filter((l) => l.includes('redis-server')).map((l) => Number(l.trim().split(/\s+/)[0])));
}

/** Cluster-mode redis-servers alive now that were not in `before`: what a study started and left behind. */
export function newClusterNodes(before: Set<number>): number[] {
  return [...clusterNodePids()].filter((pid) => !before.has(pid));
}

/** A redis-server with a TLS port beside its plain one (which redis-cli and the helpers use). */
export type TlsRedisServer = RedisServer & { tlsPort: number };

/**
 * redis-server with a TLS port on `cert`/`key`, trusting `ca` for client
 * certificates; extra args are more directives (`--tls-auth-clients yes`,
 * `--tls-protocols TLSv1.2`). Client certificates are not asked for unless
 * the extra args say so.
 */
export async function startTlsRedis(files: { cert: string; key: string; ca: string }, extra: string[] = []): Promise<TlsRedisServer> {
  // The TLS port, free when asked, can be another file's server's by the time this one binds it (redis-server
  // then exits): started again on another, 3 starts, as startRedis does for its plain port.
  for (let attempt = 1; ; attempt++) {
    const tlsPort = await freePort();
    try {
      const redis = await startRedis(['--tls-port', String(tlsPort), '--tls-cert-file', files.cert, '--tls-key-file', files.key, '--tls-ca-cert-file', files.ca, '--tls-auth-clients', 'no', ...extra]);
      await waitForPort(tlsPort);
      return Object.assign(redis, { tlsPort });
    } catch (err) {
      if (attempt === 3 || !(await canConnect('127.0.0.1', tlsPort))) throw err;
    }
  }
}

/**
 * One redis-server for the test file: started before its tests, stopped
 * after. Read `.current` inside tests (it is set once beforeAll has run).
 */
export function useRedis(extra: string[] = []): { current: RedisServer } {
  const holder = {} as { current: RedisServer };
  beforeAll(async () => {
    holder.current = await startRedis(extra);
  });
  afterAll(async () => {
    await holder.current?.stop();
  });
  return holder;
}

/**
 * A start function for tests that each start their own redis-server: every
 * server started through it is stopped after its test, and the test fails if
 * the process is still there (no orphans).
 */
export function redisPerTest(): (extra?: string[]) => Promise<RedisServer> {
  let current: RedisServer | null = null;
  afterEach(async () => {
    const port = current?.port;
    await current?.stop();
    current = null;
    if (port) expect(liveProcesses(`redis-server 127.0.0.1:${port}`)).toEqual([]);
  });
  return async (extra: string[] = []) => (current = await startRedis(extra));
}

/** A listening socket's state in /proc/net/tcp. */
const LISTEN = '0A';

/** The TCP sockets process `pid` holds, from /proc (Linux): local and remote port, and state (`01` is established, `0A` listening). */
export function tcpSocketsOf(pid: number): { localPort: number; remotePort: number; state: string }[] {
  if (!pid) return [];
  const inodes = new Set<string>();
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      let link = '';
      try {
        link = readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        continue;
      }
      const m = /^socket:\[(\d+)\]$/.exec(link);
      if (m) inodes.add(m[1]);
    }
  } catch {
    return [];
  }
  const sockets: { localPort: number; remotePort: number; state: string }[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    // Columns: sl local remote st tx:rx tr:when retrnsmt uid timeout inode.
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length > 9 && inodes.has(cols[9])) sockets.push({ localPort: parseInt(cols[1].split(':')[1], 16), remotePort: parseInt(cols[2].split(':')[1], 16), state: cols[3] });
    }
  }
  return sockets;
}

/**
 * Whether process `pid` has a TCP socket to `port` in any state (SYN sent,
 * established, …): the CLI has got as far as connecting, so its signal
 * handlers are in place. A test waits for this event, not for a guessed time.
 */
export function hasTcpSocketTo(pid: number, port: number): boolean {
  return tcpSocketsOf(pid).some((s) => s.remotePort === port);
}

/** `respbench serve --service-time <d> --port 0` (without it when null) in a child process; resolves once it says its port. */
export function startServe(serviceTime: string | null): Promise<{ port: number; child: ChildProcess }> {
  const child = spawn(process.execPath, [CLI, 'serve', '--port', '0', ...(serviceTime ? ['--service-time', serviceTime] : [])], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let text = '';
    child.once('exit', (code) => reject(new Error(`serve exited with ${code}`)));
    child.stdout!.on('data', (d) => {
      text += d;
      const m = /listening on .+:(\d+)\n/.exec(text);
      if (m) resolve({ port: Number(m[1]), child });
    });
  });
}
