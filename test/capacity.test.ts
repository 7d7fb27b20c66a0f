/**
 * `respbench capacity` against real servers: the demo server with a known
 * capacity (`serve --service-time 200us`: 5,000 ops/s whatever the
 * connections) and a client that cannot reach the rate asked: searches
 * that time the machine, so the file runs alone (a search that finds no
 * capacity, or is interrupted: capacity-ends.test.ts). Steps are 1 s (0.5 s for the client-limit search) instead
 * of the default 10 s to keep the file near half a minute; the precision
 * stays the default 5%. Short steps make the p99 of each one sensitive to
 * the machine's own pauses, which the search reads from its own schedule
 * lag: a step the client's lag alone broke runs again, and a capacity that
 * would rest on one is not printed (exit 1, saying so). Both answers are
 * right; a capacity far from the known one is not.
 */
import { spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engines } from './helpers/engines.js';
import { FAST_STEPS, stepTable, type Step } from './helpers/capacity.js';
import { runCli, startServe, useRedis } from './helpers/servers.js';

/** The turns the demo server counted as held back by the machine (its INFO: more than 5 ms late). */
function heldTurns(port: number): number {
  const info = spawnSync('redis-cli', ['-p', String(port), 'INFO'], { encoding: 'utf8' }).stdout;
  const m = /held_turns:(\d+)/.exec(info);
  if (!m) throw new Error(`no held_turns in the demo server's INFO: ${info}`);
  return Number(m[1]);
}

describe('against serve --service-time 200us (capacity 5000 ops/s)', () => {
  let serve: { port: number; child: ChildProcess };
  let dir: string;
  beforeAll(async () => {
    serve = await startServe('200us');
    dir = mkdtempSync(path.join(tmpdir(), 'respbench-capacity-'));
  });
  afterAll(() => {
    serve?.child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  // Found within 10% in both engines in 3 runs out of 3 on a quiet machine (e.g. 4960/s and 4931/s), once two
  // causes were fixed: the demo server idled through its own late turns (ServiceQueue's FORGIVE_MAX_NS;
  // 3352/s before on a busy machine, 4946/s after), and with --json the answer line did not reach stderr.
  // What the machine does to it: with both cores busy elsewhere (two `yes` processes), a step at 60% of the
  // capacity failed p99 <= 20 ms twice (80 ms and 48 ms) and the search found 2930/s; a CI machine found 3565/s.
  // A server that takes 200 us a command cannot miss 20 ms at 90% of its capacity by queueing (a few ms at
  // most), nor fall behind that rate, so such a step is the machine's pauses, read from the run itself: then the capacity cannot be found
  // here, and the test says so and skips, after checking what holds on any machine (noise only lowers it).
  it.for(engines())("engine %s: --slo 'p99<=20ms' -c 8 -P 1 finds it within 10%, with the table, the JSON curve and the chart", async (engine) => {
    const html = path.join(dir, `capacity-${engine}.html`);
    const args = ['capacity', '--slo', 'p99<=20ms', '--port', String(serve.port), '--mode', 'set', '-c', '8', '-P', '1', '--engine', engine, ...FAST_STEPS, '--html', html];
    const heldBefore = heldTurns(serve.port);
    const run = await runCli([...args, '--json'], 120_000);
    const held = heldTurns(serve.port) - heldBefore;
    const r = JSON.parse(run.stdout);
    expect(r.kind).toBe('capacity');
    const table = stepTable(r.steps);
    if (r.end === 'client-lag') {
      // The machine held the client back where the search had to decide: said, and no capacity printed.
      expect(run.code, table).toBe(1);
      expect(r.capacity).toBeNull();
      expect(r.limit.by, table).toBe('client');
      expect(r.limit.reason, table).toMatch(/^(the client's own stalls broke the SLO: |the client's own JS event loop's delay \(p99 [\d.]+ m?s\) alone broke the SLO|requests went out late .* held back by the machine)/);
      expect(run.stderr).toMatch(/^capacity: not measured: the lowest rate that failed \([\d.]+\/s\) failed on the client's own lag or the machine's stalls, not the server/m);
      expect(run.stderr).not.toMatch(/^capacity: \d+ ops\/s/m);
      return;
    }
    expect(run.code, `${table}\n${run.stderr}`).toBe(0);
    // What holds however busy the machine: the search ends, the bracket is within the precision, nothing above the capacity passes.
    expect(r.end, table).toBe('converged');
    expect(r.capacity, table).toBeLessThanOrEqual(5000 * 1.1);
    expect(r.probe.opsPerSec).toBeGreaterThan(0);
    expect((r.bracket.failed - r.bracket.met) / r.bracket.met, table).toBeLessThanOrEqual(0.05);
    // The human lines went to stderr beside --json: the header, a row per step, the answer.
    expect(run.stderr).toMatch(/^respbench capacity · engine \w+ · target 127\.0\.0\.1:\d+\n/);
    expect(run.stderr).toContain('SLO: p99 <= 20 ms, errors <= 0% (default)');
    expect(run.stderr.match(/^ +\d+ +[\d.]+ +[\d.]+ +[\d.]+ +[\d.]+ +[\d.]+ +\d+ +(yes|no)/gm), run.stderr).toHaveLength(r.steps.length);
    expect(run.stderr).toMatch(/^capacity: \d+ ops\/s with p99 <= 20 ms/m);
    const page = readFileSync(html, 'utf8');
    expect(page).toContain('<svg class="chart capacity"');
    expect(page).toContain('SLO p99 ≤ 20 ms');
    expect(page).toContain(`capacity ${r.capacity.toLocaleString('en-US')}/s`);
    // Past its capacity the server, not the client, held it back.
    expect(r.limit.by, `${r.limit.reason}: ${table}`).toBe('server');
    // Below 5000 - 10%: right only if the machine took the server's own time (another process here, not the client,
    // whose lag the tool reads), and the server says so: turns it sent more than 5 ms late during the search (its
    // INFO held_turns). Then it delivered less than 5000/s, and the tool was right to say so (CI once found 3984/s
    // after 4109/s achieved 3625).
    const off = Math.abs(r.capacity - 5000) / 5000;
    if (off > 0.1 && r.capacity < 5000 && held > 0) console.log(`engine ${engine}: the machine held the server back (${held} turns more than 5 ms late); capacity ${r.capacity}/s not held to 5000 ± 10%: ${table}`);
    else expect(off, `capacity ${r.capacity} (the server held back ${held} times): ${table}`).toBeLessThanOrEqual(0.1);
    // Monotone where it should be: in order of rate, every step the search went by up to the capacity met the SLO (and achieved its rate), every one above did not.
    const steps: Step[] = r.steps.filter((s: Step) => !s.retried).sort((a: Step, b: Step) => a.targetRate - b.targetRate);
    for (const s of steps) {
      expect(s.met, `step at ${s.targetRate}/s: ${table}`).toBe(s.targetRate <= r.capacity);
      if (s.met) expect(s.achievedRate, `step at ${s.targetRate}/s: ${table}`).toBeGreaterThanOrEqual(0.95 * s.targetRate);
      else expect(s.latencyUs.p99 > 20_000 || s.achievedRate < 0.95 * s.targetRate, `step at ${s.targetRate}/s: ${table}`).toBe(true);
    }
  });
});

describe('a client that cannot reach the rate', () => {
  const redis = useRedis();

  it('says the client was the limit: JS engine, one connection, one request in flight, 200k/s asked of Redis', async () => {
    const run = await runCli(
      // A loose SLO (200 ms): the first step fails on its rate alone, and a step within the client's reach meets it even on a
      // busy machine, where one connection's p99 at a few thousand/s can pass 20 ms (CI found none met at p99<=20ms).
      ['capacity', '--slo', 'p99<=200ms', '--port', String(redis.current.port), '--mode', 'set', '-c', '1', '-P', '1', '--engine', 'js', '--start-rate', '200000', '--step-duration', '500ms', '--warmup', '100ms', '--precision', '50%', '--json'],
      60_000,
    );
    const r = JSON.parse(run.stdout);
    const first: Step = r.steps[0];
    expect(first.targetRate).toBe(200_000);
    expect(first.met).toBe(false);
    expect(first.achievedRate).toBeLessThan(0.5 * 200_000);
    expect(first.limit, first.limitReason ?? '').toBe('client');
    expect(first.limitReason).toMatch(/window of 1 request in flight \(-c 1 × -P 1\)|CPU it can use|event loop/);
    if (r.end === 'client-lag') {
      // A busy machine held the client back at the rate the search rests on: said (as in the search above), exit 1.
      expect([run.code, r.capacity]).toEqual([1, null]);
      expect(run.stderr).toMatch(/^capacity: not measured: /m);
      return;
    }
    const table = stepTable(r.steps);
    expect(run.code, run.stderr).toBe(0);
    expect(r.end, `${r.end}: ${table}\n${run.stderr}`).toBe('converged');
    expect(r.capacity, table).toBeGreaterThan(0);
  });
});
