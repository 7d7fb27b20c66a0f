/**
 * A capacity study (issue 15): `mode: capacity` with an `slo:` makes each
 * round of a scenario a capacity search. Two demo servers of known capacity
 * (`serve --service-time`: 1/d ops/s) are the targets: the table, the
 * sentence and the chart per target come out in CSV, Markdown and HTML.
 * A loose check (ordering, within 40%): a busy 2-core machine pauses these
 * processes for tens of milliseconds; a round whose search the machine's
 * stalls decided says so and prints no capacity (checked for its words). Steps are 1 s (about 14 s in all): in
 * 500 ms steps one such pause cost a step 5% of its rate, which fails it, and
 * a search found 350/s for a 1000/s server.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI, runCli } from './helpers/servers.js';
import { parse } from './helpers/study.js';


const work = mkdtempSync(path.join(tmpdir(), 'respbench-study-capacity-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function serve(serviceTime: string): string {
  return JSON.stringify([process.execPath, CLI, 'serve', '--port', '{port}', '--service-time', serviceTime]);
}

describe('a study with mode: capacity over two servers of known capacity', () => {
  it('writes the capacities (rounds, mean, ratio) to the CSVs and Markdown, and a chart per target to the HTML', async () => {
    const dir = path.join(work, 'a');
    mkdirSync(dir);
    const file = path.join(dir, 'cap.yaml');
    writeFileSync(
      file,
      [
        'name: cap',
        'mode: capacity',
        // Loose: queueing within the 8 requests in flight stays under it (8 × 4 ms), so the rate kept decides,
        // and a pause of a busy machine (tens of ms) does not fail a step.
        "slo: 'p99<=100ms'",
        'start-rate: 200',
        'step-duration: 1s',
        'precision: 25%',
        'rounds: 1',
        'modes: [set]',
        'baseline: slow',
        'defaults: { connections: 8, pipeline: 1, warmup: 200ms }',
        'scenarios:',
        `  - { name: fast, target: { command: ${serve('1ms')} } }`,
        `  - { name: slow, target: { command: ${serve('4ms')} } }`,
        '',
      ].join('\n'),
    );
    const out = path.join(dir, 'out');
    const run = await runCli(['study', file, '--out', out, '--quiet'], 120_000);
    const files = readdirSync(out);
    const read = (re: RegExp) => readFileSync(path.join(out, files.find((f) => re.test(f))!), 'utf8');
    const summary = parse(read(/_summary_.*\.csv$/), { columns: true }) as Record<string, string>[];
    const detail = parse(read(/_detail_.*\.csv$/), { columns: true }) as Record<string, string>[];
    const markdown = read(/^cap_\d{8}_\d{6}\.md$/);
    const html = read(/\.html$/);

    expect(summary.map((r) => r.scenario)).toEqual(['fast', 'slow']);
    // One row per search, with its SLO and how it went beside the plan's flags.
    expect(detail).toHaveLength(2);
    // A busy machine may hold the client back where a search had to decide: that round says so (as `respbench capacity`
    // exits 1 for it) and has no capacity; the study then exits 1. Every capacity it does print is checked.
    const notMeasured = detail.filter((r) => r.status === 'failed');
    for (const r of notMeasured) {
      expect(r.error).toMatch(/^no capacity measured: the step at [\d.]+\/s failed on the client's own lag/);
      expect([r.capacity_end, r.ops_per_sec]).toEqual(['client-lag', '']);
      expect(markdown).toContain(`${r.scenario} · set · round 1 failed: no capacity measured`);
    }
    expect(run.code, run.stderr).toBe(notMeasured.length > 0 ? 1 : 0);
    const found = new Map(summary.filter((r) => !notMeasured.some((f) => f.scenario === r.scenario)).map((r) => [r.scenario, Number(r.mean_ops_per_sec)]));
    const known: Record<string, number> = { fast: 1000, slow: 250 };
    for (const [scenario, ops] of found) expect(Math.abs(ops - known[scenario]) / known[scenario], `${scenario} found ${ops}/s`).toBeLessThanOrEqual(0.4);
    expect(summary.filter((r) => found.has(r.scenario)).every((r) => r.slo === 'p99 ≤ 100 ms')).toBe(true);
    for (const r of detail) {
      expect(r.slo).toBe('p99<=100ms');
      expect(Number(r.capacity_steps)).toBeGreaterThan(1);
      if (r.status === 'ok') expect(Number(r.ops_per_sec)).toBe(Number(r.bracket_met));
    }
    expect(markdown).toMatch(/\| scenario \| mode \| Round1 \| mean ops\/s at p99 ≤ 100 ms \| sd ops\/s \| min ops\/s \| max ops\/s \| vs slow \|/);
    expect(markdown).toContain('slo=p99<=100ms');
    expect(html).toContain('SLO p99 ≤ 100 ms');
    const fast = found.get('fast');
    const slow = found.get('slow');
    if (fast !== undefined && slow !== undefined) {
      expect(fast, 'fast: 1 ms per command').toBeGreaterThan(slow);
      expect(Number(summary[0].ratio_to_baseline)).toBeCloseTo(fast / slow, 3);
      expect(Number(summary[0].round1_ops_per_sec)).toBe(fast);
      expect(markdown).toContain(`- set: fast reaches ${Math.round(fast)} ops/s at p99 ≤ 100 ms (${((fast / slow) * 100).toFixed(1)}% of slow), slow ${Math.round(slow)}`);
    }
    for (const scenario of found.keys()) {
      expect(html).toContain(`${scenario} · set: latency against throughput (round 1)`);
      expect(html).toContain(`capacity ${found.get(scenario)!.toLocaleString('en-US')}/s`);
    }
    expect(html.match(/<svg class="chart capacity"/g)).toHaveLength(found.size);
  });
});
