/**
 * System calls per request: one short run of each client on each shape
 * under `strace -f -c` (every thread of the client process, counted by
 * the kernel's syscall entry, not sampled), divided by the requests the run
 * sent. "all" is every call of the process, its start and exit included (a
 * few thousand for node: about 0.01 per request at 200,000 requests);
 * "I/O" only the calls that move requests and replies or wait for them
 * (read/write/send/recv in their forms, epoll_wait/epoll_pwait/epoll_ctl,
 * poll/select, io_uring_enter). strace slows every call down, which lets
 * more completions gather per io_uring_enter than an untraced run would:
 * the io_uring figure is a lower bound, the others are not affected that way.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { printTable, tracedBy } from './processes.mjs';
import { shapeName } from './compare.mjs';

const IO_CALLS = new Set([
  'read', 'write', 'readv', 'writev', 'sendto', 'recvfrom', 'sendmsg', 'recvmsg', 'sendmmsg', 'recvmmsg',
  'epoll_wait', 'epoll_pwait', 'epoll_pwait2', 'epoll_ctl', 'poll', 'ppoll', 'select', 'pselect6', 'io_uring_enter',
]);

export function hasStrace() {
  return spawnSync('strace', ['-V'], { stdio: 'ignore' }).status === 0;
}

/** `strace -c` summary → { all, io, enters } calls. */
function parseSummary(text) {
  let all = 0;
  let io = 0;
  let enters = 0;
  for (const line of text.split('\n')) {
    const cols = line.trim().split(/\s+/);
    // % time, seconds, usecs/call, calls, [errors,] syscall
    if (cols.length < 5 || !/^\d/.test(cols[0]) || cols[cols.length - 1] === 'total') continue;
    const name = cols[cols.length - 1];
    const calls = Number(cols[3]);
    if (!Number.isFinite(calls)) continue;
    all += calls;
    if (IO_CALLS.has(name)) io += calls;
    if (name === 'io_uring_enter') enters += calls;
  }
  return { all, io, enters };
}

/** Runs every client once per shape with `requests` requests under strace; prints the table. */
export async function syscallRows(clients, shapes, workload, say) {
  const dir = mkdtempSync(path.join(tmpdir(), 'respbench-perf-strace-'));
  const rows = [];
  try {
    for (const shape of shapes) {
      for (const c of clients) {
        const file = path.join(dir, 'summary.txt');
        await tracedBy(['strace', '-f', '-c', '-o', file], () => c.run(shape, workload));
        const calls = parseSummary(readFileSync(file, 'utf8'));
        const per = (n) => (n / workload.requests).toFixed(3);
        say(`${shapeName(shape)}: ${c.label} ${per(calls.io)} I/O system calls per request (strace)`);
        rows.push([shapeName(shape), c.label, String(workload.requests), per(calls.all), per(calls.io), calls.enters > 0 ? per(calls.enters) : '-']);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(`\nsystem calls per request (strace -f -c, one run of ${workload.requests} requests per shape and client; all = the whole process, start and exit included)`);
  printTable(['shape', 'client', 'requests', 'all / req', 'I/O / req', 'io_uring_enter / req'], rows);
}
