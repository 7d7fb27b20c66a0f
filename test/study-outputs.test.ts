/**
 * What a study writes, end to end through the CLI as a user runs it: output
 * names that never overwrite another study's, summary latency from the
 * rounds' merged histograms (not a mean of their p99s), the short-run
 * warning in the terminal and every report, the Markdown's spread, commands,
 * verification and relative file names, `--only`, and the HTML table's
 * latency columns.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { outputPaths } from '../packages/cli/dist/study/outputs.js';
import { runCli } from './helpers/servers.js';
import { parse, studyScratch } from './helpers/study.js';


describe('study output names', () => {
  it('never reuse the files of a study started in the same second', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'respbench-out-'));
    try {
      const first = outputPaths(dir, 'same', '20261130_070000');
      expect(path.basename(first.detail)).toBe('same_detail_20261130_070000.csv');
      writeFileSync(first.markdown, 'first');
      const second = outputPaths(dir, 'same', '20261130_070000');
      expect(path.basename(second.detail)).toBe('same_detail_20261130_070000_2.csv');
      expect(second.markdown).not.toBe(first.markdown);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

const { root: work, studyDir } = studyScratch('study-outputs');

interface Outputs {
  detail: Record<string, string>[];
  summary: Record<string, string>[];
  markdown: string;
  html: string;
  files: string[];
}

function readOutputs(out: string): Outputs {
  const files = readdirSync(out).sort();
  const read = (re: RegExp) => {
    const f = files.find((n) => re.test(n));
    if (!f) throw new Error(`no file matching ${re} in ${files.join(', ')}`);
    return readFileSync(path.join(out, f), 'utf8');
  };
  return {
    detail: parse(read(/_detail_\d{8}_\d{6}\.csv$/), { columns: true }),
    summary: parse(read(/_summary_\d{8}_\d{6}\.csv$/), { columns: true }),
    markdown: read(/_\d{8}_\d{6}\.md$/),
    html: read(/_\d{8}_\d{6}\.html$/),
    files,
  };
}

/**
 * A RESP server that answers every command with +OK, except that of the
 * first `slowUpTo` SETs every `every`-th is answered `delayMs` late: with
 * `requests: slowUpTo` only the first round is slow.
 */
const SLOW_SERVER = `
import net from 'node:net';
const [port, slowUpTo, every, delayMs] = process.argv.slice(2).map(Number);
let sets = 0;
net.createServer((sock) => {
  let buf = Buffer.alloc(0);
  let queue = Promise.resolve();
  sock.on('error', () => {});
  sock.on('data', (d) => {
    buf = Buffer.concat([buf, d]);
    for (;;) {
      const cmd = parseOne();
      if (cmd === null) break;
      const slow = cmd === 'SET' && ++sets <= slowUpTo && sets % every === 0;
      queue = queue.then(() => new Promise((r) => setTimeout(r, slow ? delayMs : 0))).then(() => { if (!sock.destroyed) sock.write('+OK\\r\\n'); });
    }
  });
  // One command array off the front of buf: its name, or null when incomplete.
  function parseOne() {
    let at = 0;
    const line = () => { const e = buf.indexOf('\\r\\n', at); if (e < 0) return null; const s = buf.toString('latin1', at, e); at = e + 2; return s; };
    const head = line();
    if (head === null) return null;
    if (head[0] !== '*') { buf = buf.subarray(at); return head.split(' ')[0].toUpperCase(); }
    let name = null;
    for (let i = 0; i < Number(head.slice(1)); i++) {
      const len = line();
      if (len === null) return null;
      const n = Number(len.slice(1));
      if (buf.length < at + n + 2) return null;
      if (i === 0) name = buf.toString('latin1', at, at + n).toUpperCase();
      at += n + 2;
    }
    buf = buf.subarray(at);
    return name;
  }
}).listen(port, '127.0.0.1');
`;

describe('summary latency', () => {
  it("is the percentiles of all rounds' requests together, while the detail CSV keeps each round's own", async () => {
    const dir = studyDir();
    writeFileSync(path.join(dir, 'slow-server.mjs'), SLOW_SERVER);
    // Round 1: 20 of its 1000 SETs (2%) answered 100 ms late, so its p99 is
    // slow; rounds 2 and 3 are all fast. A mean of the rounds' p99s is about
    // a third of 100 ms, a latency no request had; of all 3000 requests only
    // 0.67% are slow, so the merged p99 is fast and the merged p99.9 slow.
    // (Fast is well under 100 ms even on a loaded machine.)
    const file = path.join(dir, 'latency.yaml');
    writeFileSync(
      file,
      `name: latency
rounds: 3
modes: [set]
defaults: { requests: 1000, pipeline: 1, connections: 1 }
scenarios:
  - name: slow_first
    target: { command: [${JSON.stringify(process.execPath)}, slow-server.mjs, "{port}", "1000", "50", "100"] }
`,
    );
    const out = path.join(dir, 'out');
    const run = await runCli(['study', file, '--out', out, '-q'], 90_000);
    expect(run.code, run.stderr).toBe(0);
    const o = readOutputs(out);
    const p99s = o.detail.map((r) => Number(r.p99_us));
    expect(p99s[0], 'round 1 is slow at p99').toBeGreaterThan(95_000);
    expect(p99s[1]).toBeLessThan(50_000);
    expect(p99s[2]).toBeLessThan(50_000);
    const meanOfP99s = (p99s[0] + p99s[1] + p99s[2]) / 3;
    expect(meanOfP99s).toBeGreaterThan(31_000);
    const [s] = o.summary;
    expect(Number(s.p99_us), 'merged p99: 0.67% of requests are slow').toBeLessThan(Math.min(50_000, meanOfP99s));
    expect(Number(s.p999_us), 'merged p99.9').toBeGreaterThan(95_000);
    expect(Number(s.max_us)).toBe(Math.max(...o.detail.map((r) => Number(r.max_us))));
    expect(o.summary[0]).not.toHaveProperty('mean_p99_us');
    // The HTML table shows the merged figures, as the summary CSV has them.
    expect(o.html).toContain('<th>p50(us)</th><th>p99(us)</th><th>p99.9(us)</th>');
    expect(o.html).toContain(`<td class="num">${Number(s.p99_us).toFixed(2)}</td><td class="num">${Number(s.p999_us).toFixed(2)}</td>`);
  });
});

const DEMO = (name: string) => `{ name: ${name}, target: { embedded: true } }`;

describe('the short-run warning', () => {
  it('is given in the terminal, both CSVs, the Markdown and the HTML for runs under 1 s', async () => {
    const dir = studyDir();
    const file = path.join(dir, 'short.yaml');
    writeFileSync(file, `name: short\nrounds: 2\nmodes: [set]\ndefaults: { requests: 2000, pipeline: 16 }\nscenarios:\n  - ${DEMO('quick')}\n`);
    const out = path.join(dir, 'out');
    // -q: progress is off, the warning is not progress.
    const run = await runCli(['study', file, '--out', out, '-q', '--engine', 'js'], 60_000);
    expect(run.code, run.stderr).toBe(0);
    // Once per scenario and mode, not once per round.
    expect(run.stderr.match(/warning: quick · set · round 1: short run: ran [\d.]+ (ms|s) \(under 1 s\); figures from so short a run mean little/g)).toHaveLength(1);
    const o = readOutputs(out);
    expect(o.detail.map((r) => r.note)).toEqual([expect.stringMatching(/^short run: ran .* \(under 1 s\)$/), expect.stringMatching(/^short run: ran/)]);
    expect(o.summary[0].short_rounds).toBe('2');
    expect(o.summary[0].note).toMatch(/^2 of 2 rounds too short to mean much/);
    expect(o.markdown).toContain('- warning: 2 of 2 finished runs too short to mean much (under 1 s, or under 10 × pipeline × connections requests)');
    expect(o.markdown).toContain('> too short to mean much: quick · set (2/2); short run: ran');
    expect(run.stdout).toContain('- warning: 2 of 2 finished runs too short');
    expect(o.html).toContain('<li class="warn">warning: 2 of 2 finished runs too short');
    expect(o.html).toContain('<p class="warn">too short to mean much: quick · set (2/2)');
  });

  it('is given for a run of fewer than 10 × pipeline × connections requests however long it took', async () => {
    const dir = studyDir();
    const file = path.join(dir, 'few.yaml');
    // 1.2 s at 100 requests/s: long enough, but about 120 requests where 10 windows of 32 × 2 are 640.
    writeFileSync(file, `name: few\nrounds: 1\nmodes: [set]\ndefaults: { duration: 1.2s, rate: 100, pipeline: 32, connections: 2 }\nscenarios:\n  - ${DEMO('trickle')}\n`);
    const out = path.join(dir, 'out');
    const run = await runCli(['study', file, '--out', out, '-q'], 60_000);
    expect(run.code, run.stderr).toBe(0);
    const o = readOutputs(out);
    expect(Number(o.detail[0].elapsed_s)).toBeGreaterThanOrEqual(1);
    expect(o.detail[0].note).toMatch(/^short run: \d+ requests \(under 10 × pipeline 32 × connections 2 = 640\)$/);
    expect(run.stderr).toMatch(/warning: trickle · set · round 1: short run: \d+ requests \(under 10 × pipeline 32 × connections 2 = 640\)/);
    expect(o.markdown).toContain('- warning: 1 of 1 finished run too short');
  });

  it('is not given for a run long enough in time and requests', async () => {
    const dir = studyDir();
    const file = path.join(dir, 'long.yaml');
    writeFileSync(file, `name: long\nrounds: 1\nmodes: [set]\ndefaults: { duration: 1.1s, pipeline: 4 }\nscenarios:\n  - ${DEMO('steady')}\n`);
    const out = path.join(dir, 'out');
    const run = await runCli(['study', file, '--out', out, '-q'], 60_000);
    expect(run.code, run.stderr).toBe(0);
    const o = readOutputs(out);
    expect(Number(o.detail[0].answered)).toBeGreaterThan(40);
    expect(run.stderr).not.toContain('warning');
    expect(o.detail[0].note).toBe('');
    expect(o.summary[0].short_rounds).toBe('0');
    expect(o.markdown).not.toContain('too short');
    expect(o.html).not.toContain('too short');
  });
});

describe('chosen percentiles and a mix per command (issue 14)', () => {
  it("--percentiles picks the summary's, detail's and tables' latency columns; a mix's commands get rows adding up to Totals, in both engines", async () => {
    const dir = studyDir();
    const file = path.join(dir, 'mix.yaml');
    // The file's percentiles: [50, 90] is overridden by --percentiles on the command line.
    writeFileSync(
      file,
      `name: mix
rounds: 2
modes: [mixed]
percentiles: [50, 90]
defaults:
  requests: 2000
  pipeline: 8
  commands:
    - { command: 'GET __key__', weight: 3 }
    - { command: SET, weight: 1 }
scenarios:
  - { name: native, engine: native, target: { embedded: true } }
  - { name: js, engine: js, target: { embedded: true } }
`,
    );
    const out = path.join(dir, 'out');
    const run = await runCli(['study', file, '--out', out, '-q', '--rounds', '1', '--percentiles', '50,99.99'], 60_000);
    expect(run.code, run.stderr).toBe(0);
    const o = readOutputs(out);
    for (const cols of [Object.keys(o.summary[0]), Object.keys(o.detail[0])]) {
      expect(cols).toEqual(expect.arrayContaining(['p50_us', 'p9999_us', 'max_us']));
      expect(cols).not.toContain('p90_us');
      expect(cols).not.toContain('p999_us');
    }
    expect(Object.keys(o.summary[0])).toEqual(expect.arrayContaining(['command', 'requests', 'set_p9999_us', 'get_p9999_us']));
    expect(o.markdown).toContain('| mean elapsed(s) | p50(us) | p99.99(us) |');
    expect(o.html).toContain('<th>p50(us)</th><th>p99.99(us)</th>');
    for (const scenario of ['native', 'js']) {
      const mine = o.summary.filter((r) => r.scenario === scenario);
      expect(mine.map((r) => r.command)).toEqual(['Totals', 'GET', 'SET']);
      const [totals, get, set] = mine;
      expect(Number(totals.requests)).toBe(2000);
      expect(Number(get.requests) + Number(set.requests)).toBe(Number(totals.requests));
      // 3:1 by weight, within a wide margin for 2000 draws.
      expect(Number(get.requests)).toBeGreaterThan(Number(set.requests) * 2);
      for (const r of [get, set]) {
        expect(Number(r.p50_us)).toBeGreaterThan(0);
        expect(Number(r.p9999_us)).toBeGreaterThanOrEqual(Number(r.p50_us));
        expect(Number(r.max_us)).toBeLessThanOrEqual(Number(totals.max_us));
      }
      // The commands' ops/s add up to the Totals' (each is its requests over the same elapsed time).
      expect(Number(get.mean_ops_per_sec) + Number(set.mean_ops_per_sec)).toBeCloseTo(Number(totals.mean_ops_per_sec), 1);
      expect(o.markdown).toContain(`| ${scenario} | mixed | GET | ${get.requests} |`);
      expect(o.markdown).toContain(`| ${scenario} | mixed | Totals | 2000 |`);
    }
    expect(o.markdown).toContain('| scenario | mode | command | requests | mean QPS | p50(us) | p99.99(us) | max(us) |');
    expect(o.html).toContain('<h3>per command');
  });

  it("takes the study file's percentiles: without the flag, and names the line of a bad one", async () => {
    const dir = studyDir();
    const file = path.join(dir, 'pct.yaml');
    writeFileSync(file, `name: pct\nrounds: 1\nmodes: [set]\npercentiles: [99.99, 50]\ndefaults: { requests: 500 }\nscenarios:\n  - ${DEMO('one')}\n`);
    const out = path.join(dir, 'out');
    const run = await runCli(['study', file, '--out', out, '-q'], 60_000);
    expect(run.code, run.stderr).toBe(0);
    const o = readOutputs(out);
    expect(Object.keys(o.summary[0])).toEqual(expect.arrayContaining(['p50_us', 'p9999_us']));
    // No mix: no command rows, no command column.
    expect(o.summary).toHaveLength(1);
    expect(Object.keys(o.summary[0])).not.toContain('command');
    expect(o.markdown).toContain('| p50(us) | p99.99(us) |');
    writeFileSync(file, `name: pct\nrounds: 1\nmodes: [set]\npercentiles: [50, 100.5]\nscenarios:\n  - ${DEMO('one')}\n`);
    const bad = await runCli(['study', file, '--out', out, '-q'], 30_000);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/pct\.yaml:4: percentiles must be a comma-separated list of numbers above 0 and at most 100/);
  });
});

describe('the Markdown', () => {
  it('shows the spread beside the mean, the command pair and verification, and no absolute path', async () => {
    const dir = studyDir();
    const file = path.join(dir, 'paste.yaml');
    writeFileSync(
      file,
      `name: paste
rounds: 2
modes: [set, get]
defaults: { requests: 3000, pipeline: 8, keyspace: 500, verifyGet: true }
groups:
  - title: demo server
    setCmd: RSET
    getCmd: RGET
    scenarios:
      - { name: kv, tags: [kv, embedded], target: { embedded: true } }
`,
    );
    // An absolute --out: what the reports say must still not name this machine's directories.
    const out = path.join(dir, 'results');
    const run = await runCli(['study', file, '--out', out, '-q', '--engine', 'js'], 60_000);
    expect(run.code, run.stderr).toBe(0);
    const o = readOutputs(out);
    const detailName = o.files.find((f) => f.includes('_detail_'))!;
    const summaryName = o.files.find((f) => f.includes('_summary_'))!;
    expect(o.markdown).toContain(`- detail: ${detailName}\n- summary: ${summaryName}\n`);
    expect(o.html).toContain(`<a href="${detailName}">${detailName}</a>`);
    for (const [name, text] of [
      ['Markdown', o.markdown],
      ['HTML', o.html],
      ['stdout', run.stdout],
    ]) {
      expect(text, name).not.toContain(work);
      expect(text, name).not.toContain(tmpdir());
    }
    expect(o.markdown).toContain('### demo server\n\ncommands: RSET/RGET · verification (--verify-get): on, every read verified\n');
    const header = '| scenario | mode | Round1 | Round2 | mean QPS | sd QPS | CV | mean avg(us/op) | mean elapsed(s) |';
    expect(o.markdown).toContain(header);
    for (const mode of ['set', 'get']) {
      const s = o.summary.find((r) => r.mode === mode)!;
      // The label leaves out the tag that repeats the name.
      const line = o.markdown.split('\n').find((l) => l.startsWith(`| kv (embedded) | ${mode} |`))!;
      const cells = line.slice(2, -2).split(' | ');
      expect(Math.abs(Number(cells[4]) - Number(s.mean_ops_per_sec))).toBeLessThanOrEqual(0.0055 + 1e-9);
      expect(Math.abs(Number(cells[5]) - Number(s.stddev_ops_per_sec))).toBeLessThanOrEqual(0.0055 + 1e-9);
      expect(Number(cells[5])).toBeGreaterThan(0);
    }
  });

  it('says when verification is off', async () => {
    const dir = studyDir();
    const file = path.join(dir, 'noverify.yaml');
    writeFileSync(file, `name: noverify\nrounds: 1\nmodes: [get]\ndefaults: { requests: 1000 }\nscenarios:\n  - ${DEMO('plain')}\n`);
    const out = path.join(dir, 'out');
    const run = await runCli(['study', file, '--out', out, '-q', '--engine', 'js'], 60_000);
    expect(run.code, run.stderr).toBe(0);
    expect(readOutputs(out).markdown).toContain('commands: SET/GET · verification (--verify-get): off');
  });
});

describe('--only', () => {
  const STUDY = `name: part
rounds: 1
modes: [set]
baseline: base
defaults: { requests: 1000 }
groups:
  - title: first
    scenarios:
      - ${DEMO('base')}
      - ${DEMO('aof_no')}
  - title: second
    scenarios:
      - ${DEMO('aof_always')}
      - ${DEMO('rdb')}
`;

  it('runs only the scenarios its globs pick, in the study order, and the reports say so', async () => {
    const dir = studyDir();
    const file = path.join(dir, 'part.yaml');
    writeFileSync(file, STUDY);
    const out = path.join(dir, 'out');
    const run = await runCli(['study', file, '--out', out, '--engine', 'js', '--only', 'rdb', '--only', 'aof_*', '--only', 'base'], 60_000);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain('respbench study part: 4 scenarios, 4 runs');
    const o = readOutputs(out);
    expect(o.detail.map((r) => r.scenario)).toEqual(['base', 'aof_no', 'aof_always', 'rdb']);

    const part = path.join(dir, 'out2');
    const again = await runCli(['study', file, '--out', part, '--engine', 'js', '--only', 'aof_?lways', '--only', 'rd*'], 60_000);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toContain('respbench study part: 2 scenarios, 2 runs');
    // Without its baseline a part run has no ratio to give, and says why.
    expect(again.stderr).toContain('the baseline "base" is not among --only\'s scenarios');
    const p = readOutputs(part);
    expect(p.detail.map((r) => r.scenario)).toEqual(['aof_always', 'rdb']);
    expect(p.summary[0]).not.toHaveProperty('ratio_to_baseline');
    expect(p.markdown).toContain("- only: aof_always, rdb (--only; the study's other scenarios did not run)");
    expect(p.markdown).not.toContain('### first');
    expect(p.markdown).toContain('### second');
    expect(p.markdown).not.toContain('vs base');
  });

  it('refuses a pattern that picks nothing, before anything starts', async () => {
    const dir = studyDir();
    const file = path.join(dir, 'part.yaml');
    writeFileSync(file, STUDY);
    const run = await runCli(['study', file, '--out', path.join(dir, 'out'), '--only', 'aof_*', '--only', 'nvme'], 30_000);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr.trim()).toBe(`respbench: --only nvme: no scenario of ${file} matches (scenarios: base, aof_no, aof_always, rdb)`);
    expect(readdirSync(dir)).toEqual(['part.yaml']);
  });
});
