/**
 * `--cpus <list>` (e.g. `0-1,3`): the CPUs the load runs on, so the client
 * does not compete with the server and its persistence for the same cores.
 * The native engine's worker threads pin themselves (Plan.cpus,
 * crates/respbench-core/src/affinity.rs); this process — the JS engine, and
 * the native engine's Node side — is pinned here with `taskset -a -p`, every
 * thread it has, and the threads it starts later inherit it. A study's
 * `cpus:` on a target pins the server it starts the same way (taskset -c).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { UsageError } from './usage-error.js';

/** CPU numbers the kernel's cpu_set_t holds (CPU_SETSIZE). */
export const MAX_CPU = 1023;

/** The numbers of a CPU list (`0-1,3`, as taskset -c and /proc say them), ascending, each once. */
export function parseCpuList(flag: string, text: string): number[] {
  const bad = (why: string) => new UsageError(`${flag} must be a CPU list such as 0-1,3 (CPU numbers 0..${MAX_CPU}, ranges a-b with a <= b)${why}, got ${JSON.stringify(text)}`);
  if (!/^\d+(-\d+)?(,\d+(-\d+)?)*$/.test(text.trim())) throw bad('');
  const out = new Set<number>();
  for (const part of text.trim().split(',')) {
    const [lo, hi = lo] = part.split('-').map(Number);
    if (lo > hi) throw bad(`: ${part} runs backwards`);
    if (hi > MAX_CPU) throw bad(`: ${hi} is too high`);
    for (let c = lo; c <= hi; c++) out.add(c);
  }
  return [...out].sort((a, b) => a - b);
}

/** A list of numbers in the kernel's short form: `0-1,3`. */
export function formatCpuList(cpus: readonly number[]): string {
  const parts: string[] = [];
  for (let i = 0; i < cpus.length; ) {
    let j = i;
    while (j + 1 < cpus.length && cpus[j + 1] === cpus[j] + 1) j++;
    parts.push(j === i ? String(cpus[i]) : `${cpus[i]}-${cpus[j]}`);
    i = j + 1;
  }
  return parts.join(',');
}

/** The CPUs this process may run on now (Linux), or null where that cannot be read. */
export function allowedCpus(): number[] | null {
  try {
    const status = readFileSync('/proc/self/status', 'utf8');
    const line = /^Cpus_allowed_list:\s*(.+)$/m.exec(status);
    return line ? parseCpuList('Cpus_allowed_list', line[1]) : null;
  } catch {
    return null;
  }
}

/**
 * The CPUs a pin may name: those this process may run on now, and those
 * online (a study started under `taskset -c 0-1` may still put its server on
 * 2-3). Null where neither can be read.
 */
export function usableCpus(): number[] | null {
  const own = allowedCpus();
  let online: number[] | null = null;
  try {
    online = parseCpuList('online', readFileSync('/sys/devices/system/cpu/online', 'utf8').trim());
  } catch {
    /* not there (not Linux, or /sys not mounted) */
  }
  if (!own && !online) return null;
  return [...new Set([...(own ?? []), ...(online ?? [])])].sort((a, b) => a - b);
}

/** --cpus checked: a list of CPUs of this machine (exit 2 naming the flag otherwise). */
export function checkCpus(flag: string, text: string): number[] {
  if (process.platform !== 'linux') throw new UsageError(`${flag} works on Linux only (sched_setaffinity)`);
  const cpus = parseCpuList(flag, text);
  const allowed = usableCpus();
  if (allowed) {
    const missing = cpus.filter((c) => !allowed.includes(c));
    if (missing.length > 0) throw new UsageError(`${flag} ${text}: CPU ${formatCpuList(missing)} not available here (CPUs here: ${formatCpuList(allowed)})`);
  }
  return cpus;
}

/**
 * Pins every thread of this process to `cpus` (taskset -a -p); threads
 * started afterwards inherit it. Returns why it could not, or null.
 */
export function pinThisProcess(cpus: readonly number[]): string | null {
  const r = spawnSync('taskset', ['-a', '-p', '-c', formatCpuList(cpus), String(process.pid)], { encoding: 'utf8' });
  if (r.error) return (r.error as NodeJS.ErrnoException).code === 'ENOENT' ? 'taskset is not installed (util-linux)' : r.error.message;
  if (r.status !== 0) return (r.stderr || `taskset exited with status ${r.status}`).trim().split('\n')[0];
  return null;
}

/** The argv that runs `argv` on `cpus` (taskset -c). */
export function pinnedArgv(cpus: readonly number[], argv: readonly string[]): string[] {
  return ['taskset', '-c', formatCpuList(cpus), ...argv];
}
