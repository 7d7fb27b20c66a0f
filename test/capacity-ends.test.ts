/**
 * How a capacity search ends other than by finding the capacity: no rate
 * meets the SLO ("capacity: none", exit 5), and Ctrl-C during a step (the
 * bracket so far, exit 130). Nothing here rests on the machine's timing (the
 * answers found against a server of known capacity are capacity.test.ts's,
 * which runs alone), so this file runs side by side with others.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAST_STEPS, stepTable, type Step } from './helpers/capacity.js';
import { engines } from './helpers/engines.js';
import { CLI, runCli, startServe, useRedis } from './helpers/servers.js';

describe('against serve --service-time 200us', () => {
  let serve: { port: number; child: ChildProcess };
  beforeAll(async () => {
    serve = await startServe('200us');
  });
  afterAll(() => {
    serve?.child.kill('SIGKILL');
  });

  it('Ctrl-C during a step prints the bracket so far and exits 130', async () => {
    const child = spawn(process.execPath, [CLI, 'capacity', '--slo', 'p99<=20ms', '--port', String(serve.port), '--mode', 'set', '-c', '4', '-P', '1', '--start-rate', '1000', ...FAST_STEPS], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stderr!.on('data', (d) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    await new Promise<void>((resolve, reject) => {
      const guard = setTimeout(() => reject(new Error(`no step row within 20 s: ${stdout}${stderr}`)), 20_000);
      child.stdout!.on('data', (d) => {
        stdout += d;
        if (/^ +1 +1000 /m.test(stdout)) {
          clearTimeout(guard);
          resolve();
        }
      });
    });
    // Into the second step (2000/s), which then never finishes.
    await new Promise((r) => setTimeout(r, 400));
    child.kill('SIGINT');
    expect(await exited, stderr).toBe(130);
    // Step 1 ran at 1000/s: the bracket has it, on whichever side (a step on a busy machine may fail, and then runs again).
    expect(stdout).toMatch(/^interrupted \(SIGINT\): bracket so far: (met 1000\/s, failed none yet|met none yet, failed 1000\/s|met none yet, failed none yet)$/m);
    expect(stdout).not.toMatch(/^capacity:/m);
    expect(stdout.match(/^ +\d+ +\d+ /gm)).toHaveLength(1);
    expect(stderr).not.toMatch(/\n\s+at /);
  });
});

describe('against Redis, every request an error', () => {
  const redis = useRedis();

  // Every request an error reply (XADD with the ID 0-0): no rate meets errors <= 0% (the latency bound, 10 s, only
  // the errors can miss, however busy the machine), the search walks down to its
  // floor and answers "none", a gate missed. (A latency bound no rate meets, like p99<=1us, is below what the
  // client can time its sends to, and is said to be the client's lag.)
  it.for(engines())('engine %s: an SLO no rate meets: "capacity: none", exit 5', async (engine) => {
    const run = await runCli(['capacity', '--slo', 'p99<=10s', '--port', String(redis.current.port), '--command', 'XADD __key__ 0-0 f v', '-c', '1', '-P', '1', '--engine', engine, '--start-rate', '1000', '--step-duration', '200ms', '--warmup', '50ms', '--no-retry', '--json', '--quiet'], 60_000);
    const r = JSON.parse(run.stdout);
    expect(r.end, stepTable(r.steps)).toBe('none-met');
    expect(r.capacity).toBeNull();
    expect(r.steps.every((s: Step) => !s.met)).toBe(true);
    // The reason of the exit is printed even with --quiet (a run's --slo prints its missed figures so too).
    expect(run.stderr.trim()).toMatch(/^capacity: none: not even [\d.]+\/s met p99 <= 10 s, errors <= 0% \(default\)$/);
    expect(r.limit).toMatchObject({ by: 'server', reason: expect.stringMatching(/^it answered \d+ requests? with error replies \(first: ERR The ID specified in XADD/) });
    expect(run.code, run.stderr).toBe(5);
  });
});
