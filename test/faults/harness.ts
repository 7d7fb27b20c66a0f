/**
 * What the fault, interrupt and bad-input tests share: the processes a run
 * leaves behind (which engines they run through is helpers/engines.ts's).
 */
import { spawn, spawnSync } from 'node:child_process';

/** Direct children of a process (pids). */
export function childPids(pid: number): number[] {
  const r = spawnSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' });
  return r.stdout
    .split('\n')
    .map((l) => Number(l.trim()))
    .filter((n) => n > 0);
}

/** True while a process with this pid exists (zombies included). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls `check` every 20 ms until it is true; throws after `timeoutMs`. */
export async function waitFor(what: string, check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** Lines that look like a JavaScript stack trace, which users must never see. */
export const STACK_TRACE = /^\s+at .+(\(|:\d+:\d+)/m;

/**
 * A port that listens with a backlog of 0 and never accepts: once the accept
 * queue is full, further connects hang (SYNs are dropped). Node always
 * accepts, so this one is a python3 one-liner; null when python3 is missing.
 */
export async function startNoAcceptServer(): Promise<{ port: number; stop(): void } | null> {
  if (spawnSync('python3', ['--version']).status !== 0) return null;
  const script = [
    'import socket, sys, time',
    's = socket.socket()',
    "s.bind(('127.0.0.1', 0))",
    's.listen(0)',
    'print(s.getsockname()[1], flush=True)',
    'sys.stdin.read()',
  ].join('\n');
  const child = spawn('python3', ['-c', script], { stdio: ['pipe', 'pipe', 'ignore'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.once('data', (d: Buffer) => resolve(Number(d.toString().trim())));
    child.once('exit', () => reject(new Error('the no-accept server exited before listening')));
  });
  return {
    port,
    stop: () => {
      child.kill('SIGKILL');
    },
  };
}
