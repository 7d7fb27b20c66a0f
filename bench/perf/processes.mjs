/**
 * The processes `pnpm perf` starts, and how it stops them: every client is
 * measured in a process group of its own (so an interrupt ends the client and
 * whatever it started), and whatever must go when the script ends early (a
 * server, a cluster, a half-made baseline worktree) registers a cleanup that
 * an interrupt runs before the script exits.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';

const cleanups = new Set();
const groups = new Set();

/** Runs `stop` if the script is interrupted; returns the function that forgets it (call it once `stop` has run normally). */
export function onInterrupt(stop) {
  cleanups.add(stop);
  return () => cleanups.delete(stop);
}

for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143], ['SIGHUP', 129]]) {
  process.on(signal, () => {
    for (const pid of groups) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
    // Newest first: a server started inside a cluster's setup goes before the directory that holds it.
    for (const c of [...cleanups].reverse()) {
      try {
        c();
      } catch (err) {
        console.error(`perf: cleaning up after ${signal}: ${err.message}`);
      }
    }
    console.error(`perf: interrupted (${signal}); stopped what it started`);
    process.exit(code);
  });
}

/**
 * Runs a command to its end in a process group of its own; resolves with its
 * exit code, stdout and stderr. An interrupt kills the whole group.
 */
export function run(cmd, args, options = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { ...options, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    groups.add(child.pid);
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('error', (e) => {
      groups.delete(child.pid);
      reject(new Error(`${cmd}: ${e.message}`));
    });
    child.on('close', (code) => {
      groups.delete(child.pid);
      resolve({ code, out, err });
    });
  });
}

/**
 * Runs a command and returns its exit code, stdout, stderr and the CPU
 * seconds and peak RSS of it and its children (getrusage through a python
 * wrapper, which adds its own start-up to nobody: RUSAGE_CHILDREN counts
 * only the command).
 */
/** A prefix every measured command runs under while `fn` runs (strace, for the syscall counts). */
let tracer = [];
export async function tracedBy(prefix, fn) {
  tracer = prefix;
  try {
    return await fn();
  } finally {
    tracer = [];
  }
}

export async function measured(cmd, args) {
  if (tracer.length > 0) [cmd, args] = [tracer[0], [...tracer.slice(1), cmd, ...args]];
  const wrapper = [
    'import json, resource, subprocess, sys',
    'p = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE)',
    'r = resource.getrusage(resource.RUSAGE_CHILDREN)',
    'print(json.dumps({"code": p.returncode, "cpu": r.ru_utime + r.ru_stime, "user": r.ru_utime, "sys": r.ru_stime, "maxrssKb": r.ru_maxrss, "involuntarySwitches": r.ru_nivcsw, "out": p.stdout.decode(), "err": p.stderr.decode()}))',
  ].join('\n');
  const r = await run('python3', ['-c', wrapper, cmd, ...args]);
  if (r.code !== 0) throw new Error(`measuring ${cmd} failed: ${r.err}`);
  return JSON.parse(r.out);
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

export async function waitPort(port, what = 'redis-server') {
  for (let i = 0; i < 200; i++) {
    const ok = await new Promise((res) => {
      const c = net.connect(port, '127.0.0.1');
      c.once('connect', () => (c.destroy(), res(true)));
      c.once('error', () => res(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${what} did not open port ${port}`);
}

/** A running process's CPU so far (user + sys, seconds) from /proc (Linux), or null where that cannot be read. */
export function processCpuSec(pid) {
  try {
    // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(')').pop().trim().split(/\s+/);
    return (Number(f[11]) + Number(f[12])) / CLOCK_TICKS;
  } catch {
    return null;
  }
}

/** USER_HZ: what /proc counts CPU time in (100 on every Linux this runs on). */
const CLOCK_TICKS = 100;

export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** A markdown table, columns padded to their widest cell. */
export function printTable(head, rows) {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const fmt = (r) => `| ${r.map((v, i) => v.padEnd(widths[i])).join(' | ')} |`;
  console.log(fmt(head));
  console.log(`| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`);
  for (const r of rows) console.log(fmt(r));
}
