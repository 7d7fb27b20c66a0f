/**
 * `respbench study` end to end against real redis-server processes the study
 * starts itself: the files it writes (read back with a real CSV parser), what
 * an interrupt keeps and cleans up, failures recorded without stopping the
 * study, bad study files, and the HTML report rendered by headless Chromium.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { childPids } from './faults/harness.js';
import { needChromium, renderPage } from './helpers/chromium.js';
import { CLI, freePort, liveProcesses, REPO, runCli } from './helpers/servers.js';
import { parse, studyScratch } from './helpers/study.js';


const { root: work, studyDir } = studyScratch('study-test');

function writeStudy(dir: string, name: string, text: string): string {
  const file = path.join(dir, name);
  writeFileSync(file, text);
  return file;
}

interface Outputs {
  detail: Record<string, string>[];
  summary: Record<string, string>[];
  markdown: string;
  htmlPath: string;
  /** The series CSV: a row per run per interval. */
  series: Record<string, string>[];
  files: string[];
}

function readOutputs(out: string): Outputs {
  const files = readdirSync(out).sort();
  const pick = (re: RegExp) => {
    const f = files.find((n) => re.test(n));
    if (!f) throw new Error(`no file matching ${re} in ${files.join(', ')}`);
    return path.join(out, f);
  };
  return {
    detail: parse(readFileSync(pick(/_detail_\d{8}_\d{6}\.csv$/), 'utf8'), { columns: true }),
    summary: parse(readFileSync(pick(/_summary_\d{8}_\d{6}\.csv$/), 'utf8'), { columns: true }),
    markdown: readFileSync(pick(/_\d{8}_\d{6}\.md$/), 'utf8'),
    htmlPath: pick(/_\d{8}_\d{6}\.html$/),
    series: parse(readFileSync(pick(/_series_\d{8}_\d{6}\.csv$/), 'utf8'), { columns: true }),
    files,
  };
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** Data directories a study made (their names carry this prefix). */
function studyDirs(): string[] {
  return readdirSync(tmpdir()).filter((d) => d.startsWith('respbench-study-') && !d.startsWith('respbench-study-test-'));
}

/** redis-server processes still serving the ports of these runs (redis retitles itself `redis-server 127.0.0.1:PORT`). */
function redisLeftovers(rows: Record<string, string>[]): string[] {
  const ports = [...new Set(rows.map((r) => r.port).filter(Boolean))];
  expect(ports.length).toBeGreaterThan(0);
  return liveProcesses('redis-server').filter((l) => ports.some((p) => l.includes(`:${p}`)));
}

const REDIS_TITLE = 'Redis: SET/GET (persistence modes)';
let htmlFromTwoPresets: string | null = null;

describe('a study of two Redis presets over two rounds', () => {
  const dir = studyDir();
  const out = path.join(dir, 'results');
  const file = writeStudy(
    dir,
    'two-presets.yaml',
    `name: two_presets
rounds: 2
modes: [set, get]
baseline: none
defaults:
  requests: 20000
  pipeline: 32
  keyspace: 5000
  verifyGet: true
groups:
  - title: "${REDIS_TITLE}"
    scenarios:
      - { name: none,       tags: [none],       target: { redis: none } }
      - { name: aof_always, tags: [aof_always], target: { redis: aof_always } }
`,
  );
  let run: Awaited<ReturnType<typeof runCli>>;
  let outputs: Outputs;

  it('runs to the end and writes the five files', async () => {
    const before = studyDirs();
    run = await runCli(['study', file, '--out', out], 90_000);
    expect(run.stderr).not.toMatch(/\n\s+at /);
    expect(run.code, run.stderr).toBe(0);
    outputs = readOutputs(out);
    expect(outputs.files).toHaveLength(5);
    expect(outputs.files.every((f) => f.startsWith('two_presets_'))).toBe(true);
    htmlFromTwoPresets = outputs.htmlPath;
    expect(redisLeftovers(outputs.detail)).toEqual([]);
    expect(studyDirs().filter((d) => !before.includes(d))).toEqual([]);
  });

  it('writes each run\'s time series beside the detail CSV: a row per interval, adding up to the run', () => {
    const runs = new Map<string, Record<string, string>[]>();
    for (const r of outputs.series) {
      const key = `${r.scenario}/${r.mode}/${r.round}`;
      runs.set(key, [...(runs.get(key) ?? []), r]);
    }
    expect([...runs.keys()].sort()).toEqual(outputs.detail.map((r) => `${r.scenario}/${r.mode}/${r.round}`).sort());
    for (const d of outputs.detail) {
      const rows = runs.get(`${d.scenario}/${d.mode}/${d.round}`)!;
      expect(rows.map((r) => Number(r.interval))).toEqual(rows.map((_, i) => i));
      expect(rows.reduce((n, r) => n + Number(r.requests), 0)).toBe(Number(d.answered));
      expect(rows.every((r) => r.target === d.target && r.engine === d.engine && Number(r.ops_per_sec) > 0 && Number(r.p99_us) >= Number(r.p50_us))).toBe(true);
      expect(Date.parse(rows[0].time)).toBeGreaterThan(0);
    }
  });

  it('has one detail row per scenario, mode and round, all clean', () => {
    const keys = outputs.detail.map((r) => `${r.scenario}/${r.mode}/${r.round}`).sort();
    expect(keys).toEqual(
      ['aof_always/get/1', 'aof_always/get/2', 'aof_always/set/1', 'aof_always/set/2', 'none/get/1', 'none/get/2', 'none/set/1', 'none/set/2'],
    );
    for (const r of outputs.detail) {
      expect(r.status, r.error).toBe('ok');
      expect(r.group).toBe(REDIS_TITLE);
      // The tag repeats the name: the label does not ("none", not "none (none)").
      expect(r.label).toBe(r.scenario);
      expect(r.target).toBe(`redis preset ${r.scenario}`);
      expect(Number(r.requests)).toBe(20000);
      expect(Number(r.answered)).toBe(20000);
      expect(Number(r.ok)).toBe(20000);
      expect(Number(r.errors) + Number(r.misses) + Number(r.mismatches)).toBe(0);
      expect(Number(r.ops_per_sec)).toBeGreaterThan(0);
      // avg us/op is elapsed / requests, as in the tables users keep.
      expect(Number(r.avg_us_per_op)).toBeCloseTo((Number(r.elapsed_s) * 1e6) / 20000, 2);
      expect(Number(r.p50_us)).toBeGreaterThan(0);
      expect(Number(r.p99_us)).toBeGreaterThanOrEqual(Number(r.p50_us));
      expect(r.engine).toMatch(/^(js|native)$/);
      expect(r.verify_get).toBe('true');
      expect(Number(r.pipeline)).toBe(32);
      expect(Number(r.port)).toBeGreaterThan(0);
    }
  });

  it('has summary means equal to the means of the detail rows', () => {
    expect(outputs.summary.map((s) => `${s.scenario}/${s.mode}`)).toEqual(['none/set', 'none/get', 'aof_always/set', 'aof_always/get']);
    for (const s of outputs.summary) {
      const rounds = outputs.detail.filter((r) => r.scenario === s.scenario && r.mode === s.mode).sort((a, b) => Number(a.round) - Number(b.round));
      const ops = rounds.map((r) => Number(r.ops_per_sec));
      expect(Number(s.ok_rounds)).toBe(2);
      expect(Number(s.round1_ops_per_sec)).toBeCloseTo(ops[0], 2);
      expect(Number(s.round2_ops_per_sec)).toBeCloseTo(ops[1], 2);
      expect(Number(s.mean_ops_per_sec)).toBeCloseTo(mean(ops), 1);
      expect(Number(s.min_ops_per_sec)).toBeCloseTo(Math.min(...ops), 2);
      expect(Number(s.max_ops_per_sec)).toBeCloseTo(Math.max(...ops), 2);
      expect(Number(s.mean_avg_us_per_op)).toBeCloseTo(mean(rounds.map((r) => Number(r.avg_us_per_op))), 4);
      expect(Number(s.mean_elapsed_s)).toBeCloseTo(mean(rounds.map((r) => Number(r.elapsed_s))), 4);
      // Latency over rounds: the merged histograms' percentiles, which lie
      // within the rounds' own; the merged max is the largest round max.
      for (const k of ['p50_us', 'p99_us', 'p999_us']) {
        const own = rounds.map((r) => Number(r[k]));
        expect(Number(s[k])).toBeGreaterThanOrEqual(Math.min(...own));
        expect(Number(s[k])).toBeLessThanOrEqual(Math.max(...own));
      }
      expect(Number(s.max_us)).toBe(Math.max(...rounds.map((r) => Number(r.max_us))));
      const base = outputs.summary.find((b) => b.scenario === 'none' && b.mode === s.mode)!;
      expect(Number(s.ratio_to_baseline)).toBeCloseTo(Number(s.mean_ops_per_sec) / Number(base.mean_ops_per_sec), 4);
    }
  });

  it("writes the Markdown table in the original tool's layout, also on stdout", () => {
    const lines = outputs.markdown.split('\n');
    const header = '| scenario | mode | Round1 | Round2 | mean QPS | sd QPS | CV | mean avg(us/op) | mean elapsed(s) | vs none |';
    const at = lines.indexOf(header);
    expect(at, outputs.markdown).toBeGreaterThan(0);
    expect(lines[at - 4]).toBe(`### ${REDIS_TITLE}`);
    expect(lines[at - 2]).toBe('commands: SET/GET · verification (--verify-get): on, every read verified');
    const rows = lines.slice(at + 2, at + 6);
    expect(rows.map((l) => l.split(' | ').slice(0, 2).join(' | '))).toEqual(['| none | set', '| none | get', '| aof_always | set', '| aof_always | get']);
    for (const row of rows) {
      const cells = row.slice(2, -2).split(' | ');
      expect(cells).toHaveLength(10);
      expect(cells[2]).toMatch(/^\d+$/);
      expect(cells[3]).toMatch(/^\d+$/);
      expect(cells[4]).toMatch(/^\d+\.\d\d$/);
      expect(cells[5]).toMatch(/^\d+\.\d\d$/);
      expect(cells[6]).toMatch(/^\d+\.\d%$/);
      expect(cells[7]).toMatch(/^\d+\.\d\d$/);
      expect(cells[8]).toMatch(/^\d+\.\d\d$/);
      expect(cells[9]).toMatch(/^\d+\.\d%$/);
    }
    // The Markdown rounds the mean to 2 decimals and the summary CSV to 3, each
    // from the full figure: they agree within the two roundings (0.005 + 0.0005),
    // not digit for digit (283036.4649 is .46 in one and .465 → .47 in the other).
    const noneSet = outputs.summary.find((s) => s.scenario === 'none' && s.mode === 'set')!;
    const mdMean = Number(rows[0].slice(2, -2).split(' | ')[4]);
    expect(Math.abs(mdMean - Number(noneSet.mean_ops_per_sec))).toBeLessThanOrEqual(0.0055 + 1e-9);
    const mdSd = Number(rows[0].slice(2, -2).split(' | ')[5]);
    expect(Math.abs(mdSd - Number(noneSet.stddev_ops_per_sec))).toBeLessThanOrEqual(0.0055 + 1e-9);
    expect(run.stdout).toContain(header);
    expect(run.stdout).toContain(rows[0]);
  });
});

describe('command-line flags and languages', () => {
  it('overrides the file with flags given on the command line, and --lang zh gives the headers users read', async () => {
    const dir = studyDir();
    const out = path.join(dir, 'out');
    const file = writeStudy(
      dir,
      'big.yaml',
      `rounds: 5
modes: [set, get, mixed]
defaults: { requests: 5000000, pipeline: 16 }
groups:
  - title: demo
    setCmd: RSET
    getCmd: RGET
    scenarios:
      - { name: stand_in, tags: [embedded], target: { embedded: true }, pipeline: 8 }
`,
    );
    const run = await runCli(['study', file, '--out', out, '--rounds', '1', '--requests', '5000', '--modes', 'set,get', '--engine', 'js', '--lang', 'zh', '-q'], 60_000);
    expect(run.code, run.stderr).toBe(0);
    const o = readOutputs(out);
    expect(o.files[0]).toMatch(/^big_/);
    expect(o.detail.map((r) => `${r.mode}/${r.round}`)).toEqual(['set/1', 'get/1']);
    for (const r of o.detail) {
      expect(r.requests).toBe('5000');
      expect(r.engine).toBe('js');
      expect(r.pipeline).toBe('8');
      expect(r.set_cmd).toBe('RSET');
    }
    expect(o.markdown).toContain('| 场景 | 模式 | Round1 | 均值QPS | 标准差QPS | 变异系数 | 均值avg(us/op) | 均值elapsed(s) |');
    expect(o.markdown).toContain('| stand_in (embedded) | set |');
    expect(o.markdown).toMatch(/big 1轮均值复测（\d{4}-\d\d-\d\d \d\d:\d\d:\d\d）/);
  });
});

describe('the examples', () => {
  it('runs examples/quick.json (JSON study file) with a baseline across groups', async () => {
    const out = path.join(studyDir(), 'out');
    const run = await runCli(['study', path.join(REPO, 'examples', 'quick.json'), '--out', out, '--requests', '10000', '-q'], 60_000);
    expect(run.code, run.stderr).toBe(0);
    const o = readOutputs(out);
    expect(o.detail).toHaveLength(8);
    expect(o.detail.every((r) => r.status === 'ok')).toBe(true);
    expect(o.summary.find((s) => s.scenario === 'redis_none' && s.mode === 'get')!.ratio_to_baseline).toBe('1');
    expect(o.markdown).toContain('### demo server: RSET/RGET');
    expect(o.markdown).toContain('| mean elapsed(s) | vs redis_none |');
  });

  it.each(['redis-persistence.yaml', 'kvstore-vs-redis.yaml'])('accepts examples/%s', async (name) => {
    // A wrong engine name fails only after the file has been read and checked.
    const run = await runCli(['study', path.join(REPO, 'examples', name), '--engine', 'nope'], 30_000);
    expect(run.stderr.trim()).toBe('respbench: --engine must be one of auto, native, js (got "nope") (from the command line)');
    expect(run.code).toBe(2);
  });
});

describe('failures', () => {
  it('records a start command that never opens its port, goes on, and exits 1', async () => {
    const dir = studyDir();
    const out = path.join(dir, 'out');
    const port = await freePort();
    const file = writeStudy(
      dir,
      'never.yaml',
      `rounds: 2
modes: [set]
defaults: { requests: 5000 }
scenarios:
  - { name: silent, target: { command: "sleep 37.25", port: ${port}, readyTimeout: 1s } }
  - { name: demo, target: { embedded: true } }
`,
    );
    const run = await runCli(['study', file, '--out', out, '-q'], 60_000);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`scenario "silent": the start command "sleep 37.25" did not open port ${port}`);
    expect(run.stderr).not.toMatch(/\n\s+at /);
    const o = readOutputs(out);
    expect(o.detail.map((r) => `${r.scenario}/${r.round}/${r.status}`)).toEqual(['silent/1/failed', 'silent/2/failed', 'demo/1/ok', 'demo/2/ok']);
    expect(o.detail[0].error).toContain('did not open port');
    expect(o.markdown).toContain('| silent | set | failed | failed | - | - | - | - |');
    expect(liveProcesses('sleep 37.25')).toEqual([]);
  });

  it('records the runs against a server that died and goes on to the next scenario', async () => {
    const dir = studyDir();
    const out = path.join(dir, 'out');
    // A "server" that is ready, then dies while its start command lives on.
    const file = writeStudy(
      dir,
      'dies.yaml',
      `rounds: 5
modes: [set]
defaults: { requests: 300000, timeout: 2s }
scenarios:
  - name: dying
    target:
      command: "redis-server --port {port} --bind 127.0.0.1 --dir {dir} --save '' & sleep 0.2; kill -9 $!; sleep 38.5"
  - { name: demo, target: { embedded: true }, requests: 20000 }
`,
    );
    const run = await runCli(['study', file, '--out', out, '-q'], 60_000);
    const o = readOutputs(out);
    const dying = o.detail.filter((r) => r.scenario === 'dying');
    expect(dying).toHaveLength(5);
    expect(dying.some((r) => r.status === 'failed'), JSON.stringify(dying)).toBe(true);
    expect(dying.filter((r) => r.status === 'failed').every((r) => /connect|closed|reset|refused/i.test(r.error))).toBe(true);
    expect(o.detail.filter((r) => r.scenario === 'demo').map((r) => r.status)).toEqual(['ok', 'ok', 'ok', 'ok', 'ok']);
    expect(run.code).toBe(1);
    expect(liveProcesses('sleep 38.5')).toEqual([]);
  });

  it('stops at the first failure with --fail-fast', async () => {
    const dir = studyDir();
    const out = path.join(dir, 'out');
    const file = writeStudy(
      dir,
      'ff.yaml',
      `rounds: 2
modes: [set]
defaults: { requests: 5000 }
scenarios:
  - { name: broken, target: { command: "exit 3", port: ${await freePort()} } }
  - { name: demo, target: { embedded: true } }
`,
    );
    const run = await runCli(['study', file, '--out', out, '-q', '--fail-fast'], 60_000);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('exited with status 3 before opening port');
    const o = readOutputs(out);
    expect(o.detail.map((r) => r.scenario)).toEqual(['broken', 'broken']);
    expect(o.markdown).toContain('a run failed (--fail-fast)');
  });

  const BAD: [string, string, RegExp][] = [
    ['invalid.yaml', 'rounds: 2\ngroups:\n  - title: x\n    scenarios: [ { name: a, target: { redis: none }\n', /invalid.yaml:\d+: invalid YAML/],
    ['unknown-key.yaml', 'groups:\n  - title: x\n    scenarios:\n      - name: a\n        target: { redis: none }\n        reqests: 100\n', /unknown-key.yaml:6: unknown key "reqests".*did you mean "requests"/],
    ['no-target.yaml', 'groups:\n  - title: x\n    scenarios:\n      - name: a\n        tags: [t]\n', /no-target.yaml:4: scenario "a": target is missing/],
    ['preset.yaml', 'groups:\n  - title: x\n    scenarios:\n      - name: a\n        target: { redis: aof_sometimes }\n', /preset.yaml:5: unknown redis preset "aof_sometimes" \(known: none, rdb_default, aof_no, aof_everysec, aof_always\)/],
    ['rounds.yaml', 'rounds: -3\nscenarios:\n  - { name: a, target: { redis: none } }\n', /rounds.yaml:1: rounds must be a whole number/],
    ['flag.yaml', 'defaults:\n  pipeline: 0\nscenarios:\n  - { name: a, target: { redis: none } }\n', /flag.yaml:2: scenario "a": --pipeline must be a whole number/],
    ['invalid.json', '{\n  "rounds": 2,\n  "scenarios": [ { "name": "a", }\n  ]\n}\n', /invalid.json:3: invalid JSON/],
    ['key.json', '{\n  "rounds": 2,\n  "scenarios": [\n    { "name": "a", "target": { "redis": "none" }, "colour": 1 }\n  ]\n}\n', /key.json:4: unknown key "colour"/],
    [
      'bomb.yaml',
      'a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\nscenarios:\n  - { name: a, target: { redis: none } }\n',
      /bomb.yaml:2: too many YAML aliases/,
    ],
    ['rounds-cap.yaml', 'rounds: 10000\nscenarios:\n  - { name: a, target: { redis: none } }\n', /rounds-cap.yaml:1: rounds is at most 1000 \(got 10000\): a round is a whole run/],
    // What a capacity study (mode: capacity, study-capacity.test.ts) cannot use.
    ['cap-no-slo.yaml', 'mode: capacity\nscenarios: [{ name: a, target: { embedded: true } }]\n', /cap-no-slo\.yaml:1: mode: capacity needs slo:/],
    ['cap-slo-alone.yaml', "slo: 'p99<=1ms'\nscenarios: [{ name: a, target: { embedded: true } }]\n", /cap-slo-alone\.yaml:1: slo belongs to a capacity study: add mode: capacity/],
    ['cap-step.yaml', "mode: capacity\nslo: 'p99<=1ms'\nstep-duration: soon\nscenarios: [{ name: a, target: { embedded: true } }]\n", /cap-step\.yaml:3: step-duration must be a duration/],
    ['cap-slo-words.yaml', "mode: capacity\nslo: 'p99 under 1ms'\nscenarios: [{ name: a, target: { embedded: true } }]\n", /cap-slo-words\.yaml:2: slo takes conditions like/],
    ['cap-duration.yaml', "mode: capacity\nslo: 'p99<=1ms'\ndefaults: { duration: 5s }\nscenarios: [{ name: a, target: { embedded: true } }]\n", /cap-duration\.yaml:3: a capacity study sets each step's rate and length itself/],
  ];
  it.each(BAD)('rejects %s with one line naming the file and line, exit 2, nothing started', async (name, text, message) => {
    const dir = studyDir();
    const file = writeStudy(dir, name, text);
    const run = await runCli(['study', file, '--out', path.join(dir, 'out')], 30_000);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr.trim().split('\n'), run.stderr).toHaveLength(1);
    expect(run.stderr).toMatch(/^respbench: /);
    expect(run.stderr).toMatch(message);
    expect(readdirSync(dir)).toEqual([name]);
  });

  it.each([['--rate', 'rate', '100'], ['-n', 'requests', '100'], ['--duration', 'duration', '2s']])('a capacity study with %s on the command line: exit 2 naming the flag', async (flag, key, value) => {
    const dir = studyDir();
    const file = writeStudy(dir, 'cap.yaml', "mode: capacity\nslo: 'p99<=1ms'\nscenarios: [{ name: a, target: { embedded: true } }]\n");
    const run = await runCli(['study', file, '--out', path.join(dir, 'out'), flag, value]);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr.trim()).toMatch(new RegExp(`^respbench: --${key}: a capacity study sets each step's rate and length itself: use start-rate and step-duration instead of ${key}$`));
    expect(readdirSync(dir)).toEqual(['cap.yaml']);
  });
});

/** Starts a study as a child process and resolves once `minRows` runs are in its detail CSV. */
/** Studies started in the background; any still running after its test (a failed one) is killed. */
const running: ChildProcess[] = [];
afterEach(() => {
  for (const child of running.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
});

async function startAndWaitForRows(args: string[], out: string, minRows: number, timeoutMs = 60_000, detached = false) {
  // detached: the leader of a process group of its own, to be signalled the way a terminal does.
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'], detached });
  running.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const closed = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  const deadline = Date.now() + timeoutMs;
  let seen = 0;
  while (Date.now() < deadline && child.exitCode === null) {
    try {
      const f = readdirSync(out).find((n) => /_detail_.*\.csv$/.test(n));
      if (f) seen = parse(readFileSync(path.join(out, f), 'utf8'), { columns: true }).length;
    } catch {
      /* not written yet */
    }
    if (seen >= minRows) break;
    await new Promise((r) => setTimeout(r, 25));
  }
  return { child, closed, seen, output: () => ({ stdout, stderr }) };
}

describe('an interrupted study', () => {
  it('keeps its finished rows on SIGINT, stops its redis-servers, removes their data and exits 130', async () => {
    const dir = studyDir();
    const out = path.join(dir, 'out');
    const before = studyDirs();
    const file = writeStudy(
      dir,
      'long.yaml',
      `name: long
rounds: 50
modes: [set, get]
defaults: { requests: 50000, pipeline: 32, keyspace: 5000 }
groups:
  - title: "${REDIS_TITLE}"
    scenarios:
      - { name: none,   tags: [none],   target: { redis: none } }
      - { name: aof_no, tags: [aof_no], target: { redis: aof_no } }
`,
    );
    const study = await startAndWaitForRows(['study', file, '--out', out], out, 3);
    expect(study.seen).toBeGreaterThanOrEqual(3);
    study.child.kill('SIGINT');
    const code = await study.closed;
    const { stdout, stderr } = study.output();
    expect(code, stderr).toBe(130);
    expect(stderr).toContain('SIGINT: stopping the study');
    const o = readOutputs(out);
    expect(o.detail.length).toBeGreaterThanOrEqual(study.seen);
    expect(o.detail.length).toBeLessThan(200);
    expect(o.detail.every((r) => r.status === 'ok')).toBe(true);
    o.detail.forEach((r, i) => expect(Number(r.round)).toBe(i + 1));
    expect(o.markdown).toContain('interrupted (SIGINT)');
    expect(o.markdown).toContain(`partial: ${o.detail.length} of 200 runs finished`);
    expect(stdout).toContain('| none | set |');
    expect(redisLeftovers(o.detail)).toEqual([]);
    expect(studyDirs().filter((d) => !before.includes(d))).toEqual([]);
  });

  it('exits 143 on SIGTERM and stops the server it started', async () => {
    const dir = studyDir();
    const out = path.join(dir, 'out');
    const file = writeStudy(dir, 'term.yaml', 'rounds: 100\nmodes: [set]\ndefaults: { requests: 20000 }\nscenarios:\n  - { name: demo, target: { embedded: true } }\n');
    const study = await startAndWaitForRows(['study', file, '--out', out, '-q'], out, 1);
    const servers = liveProcesses('serve --port').filter((l) => l.includes('--exit-with-stdin'));
    study.child.kill('SIGTERM');
    expect(await study.closed).toBe(143);
    expect(readOutputs(out).detail.length).toBeGreaterThanOrEqual(1);
    const pids = servers.map((l) => l.trim().split(/\s+/)[0]);
    const still = liveProcesses('serve --port').filter((l) => pids.includes(l.trim().split(/\s+/)[0]));
    expect(still).toEqual([]);
  });
});

describe('the HTML report', () => {
  it('opens in headless Chromium and shows its charts', (ctx) => {
    needChromium(ctx, 'the study HTML report');
    expect(htmlFromTwoPresets, 'the two-preset study ran first and wrote an HTML report').not.toBeNull();
    // The screenshot goes beside the report, in the study's output folder.
    const shot = path.join(path.dirname(htmlFromTwoPresets!), 'report.png');
    const { dom: html, pngBytes } = renderPage(htmlFromTwoPresets!, shot, '1000,2600');
    expect(html).toContain(REDIS_TITLE);
    expect(html.match(/<svg class="chart throughput"/g)).toHaveLength(1);
    expect(html.match(/<svg class="chart latency"/g)).toHaveLength(1);
    // One bar per scenario and mode, with the rounds as dots.
    expect(html.match(/<g class="bar"/g)).toHaveLength(4);
    expect((html.match(/<circle[^>]*class="round"/g) ?? []).length).toBe(8);
    expect(html.match(/<g class="latency"/g)).toHaveLength(4);
    // The table carries the merged latency; each mean sits in one column right of the plot; no label repeats its tag.
    expect(html).toContain('<th>p50(us)</th><th>p99(us)</th><th>p99.9(us)</th>');
    const means = [...html.matchAll(/<text x="([\d.]+)"[^>]*class="value mean"/g)].map((m) => m[1]);
    expect(means).toHaveLength(4);
    expect(new Set(means).size).toBe(1);
    expect(html).not.toContain('none (none)');
    // Over time, per mode: throughput and p99, a line per scenario and round, a dot per interval of the series CSV (linked, relative).
    const { series, files } = readOutputs(path.dirname(htmlFromTwoPresets!));
    const seriesName = files.find((f) => f.includes('_series_'))!;
    expect(html).toContain(`<a href="${seriesName}">${seriesName}</a>`);
    for (const kind of ['throughput', 'latency']) {
      const svgs = html.match(new RegExp(`<svg class="chart overtime ${kind}"[\\s\\S]*?</svg>`, 'g'))!;
      expect(svgs, kind).toHaveLength(2);
      svgs.forEach((svg, i) => {
        const mode = ['set', 'get'][i];
        expect(svg.match(/<g class="series"/g), `${kind} ${mode}`).toHaveLength(4);
        expect(svg.match(/<circle class="point/g)!.length, `${kind} ${mode}`).toBe(series.filter((r) => r.mode === mode).length);
        expect(svg).toContain('seconds into the measured phase</text>');
        expect(svg).toContain(kind === 'throughput' ? 'ops/s per interval</text>' : 'p99 per interval (log scale)</text>');
      });
    }
    expect(pngBytes).toBeGreaterThan(10_000);
  });
});

/** Every process in a process group (zombies included). */
function groupMembers(pgid: number): string[] {
  const r = spawnSync('ps', ['-eo', 'pid=,pgid=,args='], { encoding: 'utf8' });
  return r.stdout.split('\n').filter((l) => l.trim().split(/\s+/)[1] === String(pgid));
}

async function waitUntil(what: string, check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('signals the way a terminal and kill -9 send them', () => {
  const redisStudy = (rounds: number) =>
    `name: sig\nrounds: ${rounds}\nmodes: [set]\ndefaults: { requests: 30000, pipeline: 16 }\nscenarios:\n  - { name: none, target: { redis: none } }\n`;

  it('SIGHUP (the terminal closed) stops the study like SIGTERM: tables printed, redis-server stopped, data removed, exit 129', async () => {
    const dir = studyDir();
    const out = path.join(dir, 'out');
    const before = studyDirs();
    const file = writeStudy(dir, 'hup.yaml', redisStudy(200));
    const study = await startAndWaitForRows(['study', file, '--out', out, '-q'], out, 1, 60_000, true);
    process.kill(-study.child.pid!, 'SIGHUP');
    const code = await study.closed;
    const { stdout, stderr } = study.output();
    expect(code, stderr).toBe(129);
    expect(stderr).toContain('SIGHUP: stopping the study');
    expect(stdout).toContain('| none | set |');
    const o = readOutputs(out);
    expect(o.markdown).toContain('interrupted (SIGHUP)');
    expect(redisLeftovers(o.detail)).toEqual([]);
    expect(studyDirs().filter((d) => !before.includes(d))).toEqual([]);
  });

  it('two SIGINTs 15 ms apart to the process group: the tables are still printed, the servers stopped, exit 130', async () => {
    const dir = studyDir();
    const out = path.join(dir, 'out');
    const before = studyDirs();
    const file = writeStudy(dir, 'twice.yaml', redisStudy(200));
    const study = await startAndWaitForRows(['study', file, '--out', out, '-q'], out, 2, 60_000, true);
    process.kill(-study.child.pid!, 'SIGINT');
    await new Promise((r) => setTimeout(r, 15));
    process.kill(-study.child.pid!, 'SIGINT');
    const code = await study.closed;
    const { stdout, stderr } = study.output();
    expect(code, stderr).toBe(130);
    expect(stdout).toContain('| none | set |');
    expect(stderr).not.toMatch(/\n\s+at /);
    const o = readOutputs(out);
    expect(o.detail.length).toBeGreaterThanOrEqual(2);
    expect(o.detail.every((r) => r.status === 'ok')).toBe(true);
    expect(redisLeftovers(o.detail)).toEqual([]);
    expect(studyDirs().filter((d) => !before.includes(d))).toEqual([]);
  });

  const targets: [string, string][] = [
    ['a redis preset', '{ redis: none }'],
    ['a start command (its sh and the server)', `{ command: "redis-server --port {port} --bind 127.0.0.1 --dir {dir} --save '' & sleep 41.25; wait" }`],
  ];
  it.each(targets)('SIGKILL leaves nothing of %s running, and the next study removes its data directory', async (_what, target) => {
    const dir = studyDir();
    const out = path.join(dir, 'out');
    const file = writeStudy(dir, 'killed.yaml', `rounds: 200\nmodes: [set]\ndefaults: { requests: 30000 }\nscenarios:\n  - { name: t, target: ${target} }\n`);
    const study = await startAndWaitForRows(['study', file, '--out', out, '-q'], out, 1);
    const studyPid = study.child.pid!;
    // What the study started is one process group, led by the child of the study.
    const leader = childPids(studyPid)[0];
    expect(leader).toBeGreaterThan(0);
    expect(groupMembers(leader).some((l) => l.includes('redis-server'))).toBe(true);
    const leftDirs = () => studyDirs().filter((d) => d.startsWith(`respbench-study-${studyPid}-`));
    expect(leftDirs()).toHaveLength(1);
    study.child.kill('SIGKILL');
    await study.closed;
    await waitUntil('the started processes to die with the study', () => groupMembers(leader).length === 0);
    // The dead study could not remove its data; the next one does.
    expect(leftDirs()).toHaveLength(1);
    const next = writeStudy(dir, 'next.yaml', 'rounds: 1\nmodes: [set]\ndefaults: { requests: 1000 }\nscenarios:\n  - { name: demo, target: { embedded: true } }\n');
    const run = await runCli(['study', next, '--out', path.join(dir, 'out2'), '-q'], 60_000);
    expect(run.code, run.stderr).toBe(0);
    expect(leftDirs()).toEqual([]);
  });
});

describe('target output', () => {
  it('goes to a log file in --out (a file descriptor, not through respbench), removed when all went well', async () => {
    const dir = studyDir();
    const out = path.join(dir, 'out');
    // A chatty server: a few MB of output while it serves.
    const chatty = `redis-server --port {port} --bind 127.0.0.1 --save '' & i=0; while [ $i -lt 20000 ]; do echo "chatter line $i of a target that talks a lot"; i=$((i+1)); done; wait`;
    const file = writeStudy(dir, 'chatty.yaml', `name: chatty\nrounds: 20\nmodes: [set]\ndefaults: { requests: 20000 }\nscenarios:\n  - { name: talker, target: { command: "${chatty.replace(/"/g, '\\"')}" } }\n`);
    const study = await startAndWaitForRows(['study', file, '--out', out, '-q'], out, 1);
    const supervisor = childPids(study.child.pid!)[0];
    // The server's stdout is the log file itself.
    expect(readlinkSync(`/proc/${supervisor}/fd/1`)).toMatch(/chatty_\d{8}_\d{6}_talker\.log$/);
    const code = await study.closed;
    expect(code, study.output().stderr).toBe(0);
    const o = readOutputs(out);
    expect(o.detail.map((r) => r.status)).toEqual(Array(20).fill('ok'));
    // All went well: the five reports, no log.
    expect(o.files).toHaveLength(5);
  });

  it('a target that fails to start: its log is kept and named with its last lines; the CSV shows the command as it ran', async () => {
    const dir = studyDir();
    const out = path.join(dir, 'out');
    const file = writeStudy(
      dir,
      'broken.yaml',
      `name: broken\nrounds: 1\nmodes: [set]\nscenarios:\n  - { name: bad, target: { command: "echo starting on {port}; echo 'fatal: bad config' >&2; exit 3" } }\n  - { name: slow, target: { command: "echo slow start on {port}; sleep 37.75", readyTimeout: 1s } }\n`,
    );
    const run = await runCli(['study', file, '--out', out, '-q'], 60_000);
    expect(run.code).toBe(1);
    const o = readOutputs(out);
    const [bad, slow] = o.detail;
    const badPort = /starting on (\d+)/.exec(bad.target)?.[1];
    expect(badPort, bad.target).toBeTruthy();
    expect(bad.target).toBe(`command: echo starting on ${badPort}; echo 'fatal: bad config' >&2; exit 3`);
    const badLog = o.files.find((f) => f.endsWith('_bad.log'));
    expect(badLog).toBeTruthy();
    expect(readFileSync(path.join(out, badLog!), 'utf8')).toBe(`starting on ${badPort}\nfatal: bad config\n`);
    expect(run.stderr).toContain(`exited with status 3 before opening port ${badPort}; its output is in ${path.join(out, badLog!)} (last lines: starting on ${badPort} | fatal: bad config)`);
    const slowPort = /start on (\d+)/.exec(slow.target)?.[1];
    expect(run.stderr).toContain(`the start command "echo slow start on ${slowPort}; sleep 37.75" did not open port ${slowPort} on 127.0.0.1 within 1 s (if it needs longer, give the target readyTimeout`);
    expect(run.stderr).toContain(`(last lines: slow start on ${slowPort})`);
    expect(liveProcesses('sleep 37.75')).toEqual([]);
  });
});

describe('outputs on bad disks', () => {
  /** A tiny tmpfs (root only); null when it cannot be mounted here. */
  function mountTmpfs(options: string): string | null {
    const dir = mkdtempSync(path.join(work, 'mnt-'));
    const r = spawnSync('mount', ['-t', 'tmpfs', '-o', options, 'tmpfs', dir], { encoding: 'utf8' });
    if (r.status !== 0) {
      rmSync(dir, { recursive: true, force: true });
      return null;
    }
    return dir;
  }
  function unmount(dir: string): void {
    spawnSync('umount', [dir]);
    rmSync(dir, { recursive: true, force: true });
  }
  const quick = 'name: disk\nrounds: 2\nmodes: [set]\ndefaults: { requests: 2000 }\nscenarios:\n  - { name: demo, target: { embedded: true } }\n';

  it('a full --out names each file it could not write, leaves no temp file, still prints the tables, exit 1', async (ctx) => {
    const mnt = mountTmpfs('size=64k');
    if (!mnt) return ctx.skip('cannot mount a tmpfs here (needs root)');
    try {
      // Fill it up.
      const filler = path.join(mnt, 'filler');
      try {
        for (let i = 0; i < 1000; i++) appendFileSync(filler, Buffer.alloc(4096));
      } catch (err) {
        expect((err as NodeJS.ErrnoException).code).toBe('ENOSPC');
      }
      const dir = studyDir();
      const file = writeStudy(dir, 'disk.yaml', quick);
      const out = path.join(mnt, 'results');
      const run = await runCli(['study', file, '--out', out, '-q'], 60_000);
      expect(run.code).toBe(1);
      expect(run.stderr).not.toMatch(/\n\s+at /);
      expect(run.stderr).toMatch(/cannot write .*disk_detail_\d{8}_\d{6}\.csv: no space left on device \(ENOSPC\)/);
      expect(run.stderr).toMatch(/NOT written: .*disk_\d{8}_\d{6}\.md/);
      expect(run.stdout).toContain('| demo | set |');
      expect(readdirSync(out).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    } finally {
      unmount(mnt);
    }
  });

  it('a disk that fills up half-way: the study goes on, the detail CSV holds whole rows only, no temp file, the tables printed, exit 1', async (ctx) => {
    const mnt = mountTmpfs('size=64k');
    if (!mnt) return ctx.skip('cannot mount a tmpfs here (needs root)');
    try {
      // Leave about 24 kB (tmpfs gives each file whole 4 kB pages: one per output file at the
      // start, five of them with the series CSV): room for the first rows, not for forty.
      const filler = path.join(mnt, 'filler');
      try {
        for (let i = 0; i < 10; i++) appendFileSync(filler, Buffer.alloc(4096));
      } catch (err) {
        expect((err as NodeJS.ErrnoException).code).toBe('ENOSPC');
      }
      const dir = studyDir();
      const file = writeStudy(dir, 'half.yaml', 'name: half\nrounds: 40\nmodes: [set]\ndefaults: { requests: 500 }\nscenarios:\n  - { name: demo, target: { embedded: true } }\n');
      const out = path.join(mnt, 'results');
      const run = await runCli(['study', file, '--out', out, '-q'], 90_000);
      expect(run.code, run.stderr).toBe(1);
      expect(run.stderr).not.toMatch(/\n\s+at /);
      expect(run.stderr).toMatch(/cannot write .*: no space left on device \(ENOSPC\); the study goes on/);
      expect(run.stdout).toContain('| demo | set |');
      const files = readdirSync(out);
      expect(files.filter((f) => f.endsWith('.tmp'))).toEqual([]);
      const detail = files.find((f) => /_detail_.*\.csv$/.test(f));
      expect(detail).toBeTruthy();
      // Every row whole (a real CSV parser reads it), in order from round 1, until the disk was full.
      const rows = parse(readFileSync(path.join(out, detail!), 'utf8'), { columns: true }) as Record<string, string>[];
      rows.forEach((r, i) => expect(Number(r.round)).toBe(i + 1));
      expect(rows.length).toBeGreaterThan(0);
      expect(rows.length).toBeLessThan(40);
    } finally {
      unmount(mnt);
    }
  });

  it('a read-only --out is refused before anything starts, saying it is read-only', async (ctx) => {
    const mnt = mountTmpfs('size=64k,ro');
    if (!mnt) return ctx.skip('cannot mount a tmpfs here (needs root)');
    try {
      const dir = studyDir();
      const file = writeStudy(dir, 'disk.yaml', quick);
      for (const out of [mnt, path.join(mnt, 'results', 'deeper')]) {
        const run = await runCli(['study', file, '--out', out, '-q'], 60_000);
        expect(run.code).toBe(1);
        expect(run.stdout).toBe('');
        expect(run.stderr.trim().split('\n')).toHaveLength(1);
        expect(run.stderr).toContain(`--out ${out}: `);
        expect(run.stderr).toContain('read-only file system (EROFS): not writable');
        expect(run.stderr).not.toContain('ENOENT');
      }
    } finally {
      unmount(mnt);
    }
  });
});

describe('a study of many rounds', () => {
  it('appends to the detail CSV and rewrites the summaries at most every few seconds', async () => {
    const dir = studyDir();
    const out = path.join(dir, 'out');
    const file = writeStudy(dir, 'many.yaml', 'name: many\nrounds: 60\nmodes: [set]\ndefaults: { requests: 200, pipeline: 1 }\nscenarios:\n  - { name: demo, target: { embedded: true } }\n');
    const child = spawn(process.execPath, [CLI, 'study', file, '--out', out, '-q'], { stdio: ['ignore', 'pipe', 'pipe'] });
    running.push(child);
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const closed = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    // Watch the files' inodes: a rewrite (temp file renamed over) gives a new one, an append keeps it.
    const detailInodes = new Set<number>();
    const seriesInodes = new Set<number>();
    const markdownInodes = new Set<number>();
    const started = Date.now();
    let done = false;
    void closed.then(() => (done = true));
    while (!done) {
      try {
        for (const f of readdirSync(out)) {
          if (/_detail_.*\.csv$/.test(f)) detailInodes.add(statSync(path.join(out, f)).ino);
          if (/_series_.*\.csv$/.test(f)) seriesInodes.add(statSync(path.join(out, f)).ino);
          if (/\.md$/.test(f)) markdownInodes.add(statSync(path.join(out, f)).ino);
        }
      } catch {
        /* not there yet */
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    expect(await closed, stderr).toBe(0);
    const seconds = (Date.now() - started) / 1000;
    const o = readOutputs(out);
    expect(o.detail).toHaveLength(60);
    // Written whole at the start, at the first row (its columns) and at the end; appended otherwise.
    expect(detailInodes.size).toBeLessThanOrEqual(4);
    expect(seriesInodes.size).toBeLessThanOrEqual(4);
    expect(markdownInodes.size).toBeLessThanOrEqual(Math.ceil(seconds / 5) + 3);
    expect(o.markdown).toContain('| demo | set |');
  });
});
