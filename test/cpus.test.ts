/**
 * --cpus (issue 14, "figures that hold still"): the load's threads run on
 * the CPUs asked for, as the kernel reports them (/proc/<pid>/task/<tid>/status
 * Cpus_allowed_list), in both engines; the native engine's worker threads pin
 * themselves (sched_setaffinity), even where taskset is missing.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bothEngines, engines } from './helpers/engines.js';
import { CLI, runCli, useRedis } from './helpers/servers.js';

const linux = process.platform === 'linux';

function allowedOf(status: string): string {
  return /^Cpus_allowed_list:\s*(.+)$/m.exec(status)?.[1].trim() ?? '?';
}

/** The CPU list this test process may use, and its last CPU (what the runs are pinned to). */
const allowed = linux ? allowedOf(readFileSync('/proc/self/status', 'utf8')) : '';
const target = (() => {
  const last = allowed.split(',').pop() ?? '0';
  return last.split('-').pop() ?? '0';
})();

interface Thread {
  name: string;
  cpus: string;
}

/**
 * Runs the CLI and, once the first interval line is out (the load is
 * running, every thread started), reads each thread's name and CPU list.
 */
function threadsWhileRunning(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<{ code: number | null; stderr: string; threads: Thread[] }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env });
    let stderr = '';
    let threads: Thread[] = [];
    child.stdout.resume();
    child.stderr.on('data', (d) => {
      stderr += d;
      if (threads.length === 0 && /ops\/s/.test(stderr)) {
        const dir = `/proc/${child.pid}/task`;
        try {
          threads = readdirSync(dir).map((tid) => ({
            name: readFileSync(path.join(dir, tid, 'comm'), 'utf8').trim(),
            cpus: allowedOf(readFileSync(path.join(dir, tid, 'status'), 'utf8')),
          }));
        } catch {
          /* ended meanwhile: no threads seen, the test says so */
        }
      }
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr, threads });
    });
  });
}

describe.skipIf(!linux)('--cpus', () => {
  const redis = useRedis();
  const load = () => ['-p', String(redis.current.port), '-c', '2', '-P', '4', '--duration', '1500ms', '--interval', '200ms', '--json'];
  const dirs: string[] = [];
  afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

  it.each(engines())('engine %s: every thread of the run is on the CPUs asked for', async (engine) => {
    const r = await threadsWhileRunning(['--engine', engine, '--threads', '2', '--cpus', target, ...load()]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.threads.length).toBeGreaterThan(0);
    expect(r.threads.filter((t) => t.cpus !== target)).toEqual([]);
    if (engine === 'native') expect(r.threads.filter((t) => t.name.startsWith('respbench-work')).length).toBe(2);
  });

  it.skipIf(!bothEngines())('the native engine\'s worker threads pin themselves (no taskset on the PATH)', async () => {
    const empty = mkdtempSync(path.join(tmpdir(), 'respbench-nopath-'));
    dirs.push(empty);
    const r = await threadsWhileRunning(['--engine', 'native', '--threads', '2', '--cpus', target, ...load()], { ...process.env, PATH: empty });
    expect(r.code, r.stderr).toBe(0);
    const workers = r.threads.filter((t) => t.name.startsWith('respbench-work'));
    expect(workers.length).toBe(2);
    expect(workers.every((t) => t.cpus === target)).toBe(true);
  });

  it('the JS engine without taskset says it cannot pin, exit 1', async () => {
    const empty = mkdtempSync(path.join(tmpdir(), 'respbench-nopath-'));
    dirs.push(empty);
    const r = await runCli(['--engine', 'js', '--cpus', target, '-p', String(redis.current.port), '-n', '100'], 20_000, { ...process.env, PATH: empty });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/--cpus: cannot pin the JS engine's process: taskset is not installed/);
  });

  it.each([
    ['3-1', /runs backwards/],
    ['0,x', /must be a CPU list such as 0-1,3/],
    ['1024', /is too high/],
    ['1000', /CPU 1000 not available here/],
  ])('--cpus %s: exit 2 naming the flag, before any run', async (list, why) => {
    const r = await runCli(['--cpus', list, '-p', '1', '-n', '1']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--cpus/);
    expect(r.stderr).toMatch(why);
  });
});

describe.skipIf(!linux)('a study target\'s cpus:', () => {
  const dirs: string[] = [];
  afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
  const study = (target: string) => {
    const dir = mkdtempSync(path.join(tmpdir(), 'respbench-cpus-study-'));
    dirs.push(dir);
    const file = path.join(dir, 'pinned.yaml');
    writeFileSync(file, `name: pinned\nrounds: 1\nmodes: [set]\ndefaults: { requests: 2000, engine: js }\nscenarios:\n  - { name: s, target: ${target} }\n`);
    return { dir, file };
  };

  it('starts the server on those CPUs (taskset -c) and says so in the target column', async () => {
    const { dir, file } = study(`{ command: "grep Cpus_allowed_list /proc/$$/status > seen.txt; exec redis-server --port {port} --bind 127.0.0.1 --save ''", cpus: "${target}" }`);
    const r = await runCli(['study', file, '--out', path.join(dir, 'out'), '-q'], 30_000);
    expect(r.code, r.stderr).toBe(0);
    expect(allowedOf(readFileSync(path.join(dir, 'seen.txt'), 'utf8'))).toBe(target);
    const detail = readdirSync(path.join(dir, 'out')).find((f) => f.includes('_detail_'))!;
    expect(readFileSync(path.join(dir, 'out', detail), 'utf8')).toContain(`(cpus ${target})`);
  });

  it('a bad cpus: is a study file error naming the key', async () => {
    const { dir, file } = study('{ redis: none, cpus: "2-1" }');
    const r = await runCli(['study', file, '--out', path.join(dir, 'out')], 20_000);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/pinned\.yaml:\d+.*cpus.*runs backwards/s);
  });
});

describe('a study\'s cvWarn:', () => {
  const dirs: string[] = [];
  afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
  const study = (cvWarn: string) => {
    const dir = mkdtempSync(path.join(tmpdir(), 'respbench-cv-'));
    dirs.push(dir);
    const file = path.join(dir, 'cv.yaml');
    writeFileSync(file, `name: cv\nrounds: 2\nmodes: [set]\ncvWarn: ${cvWarn}\ndefaults: { requests: 3000, engine: js }\nscenarios:\n  - { name: demo, target: { embedded: true } }\n`);
    return { dir, file };
  };

  it('warns in the summary when the rounds vary more than it, with the CV column and summary CSV column', async () => {
    // Two real rounds never agree to 0.0001%: the warning must show.
    const { dir, file } = study('0.0001%');
    const r = await runCli(['study', file, '--out', path.join(dir, 'out'), '-q'], 60_000);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/\| mean QPS \| sd QPS \| CV \|/);
    expect(r.stdout).toMatch(/warning: rounds disagree \(ops\/s coefficient of variation above 0\.0%\): demo · set \(\d+\.\d%\); run more rounds, or pin/);
    const summary = readdirSync(path.join(dir, 'out')).find((f) => f.includes('_summary_'))!;
    const [header, line] = readFileSync(path.join(dir, 'out', summary), 'utf8').trim().split('\n');
    const cv = Number(line.split(',')[header.split(',').indexOf('cv_ops_per_sec')]);
    expect(cv).toBeGreaterThan(0);
  });

  it('a bad cvWarn is a study file error naming the key', async () => {
    const { dir, file } = study('lots');
    const r = await runCli(['study', file, '--out', path.join(dir, 'out')], 20_000);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/cv\.yaml:\d+.*cvWarn must be a percentage/s);
  });
});
