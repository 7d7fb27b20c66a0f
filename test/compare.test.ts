/**
 * `respbench compare` and the CI gates end to end (issue 22 Done when), in
 * both engines: results saved from a fast and a deliberately slowed server
 * (`respbench serve --service-time`, a server of known capacity whatever the
 * machine) — compare calls the slow one worse and exits 5 under --fail-if;
 * two runs of the same server are within noise and exit 0. Around it: the
 * JUnit file valid against the JUnit XSD, --slo on a run and a -t suite,
 * -x rounds as the noise. What compare refuses and the previous file form:
 * compare-input.test.ts (no timing in them: they run side by side).
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { XmlDocument, XsdValidator } from 'libxml2-wasm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engines } from './helpers/engines.js';
import { freePort, parseResult, REPO, runCli, startServe } from './helpers/servers.js';

const dir = mkdtempSync(path.join(tmpdir(), 'respbench-compare-'));
let fast: { port: number; child: ChildProcess };
let slow: { port: number; child: ChildProcess };
beforeAll(async () => {
  // 400 us a command (2,500 ops/s) and 2 ms (500 ops/s): rates a busy machine's client keeps up with, so the
  // server's queue, not the machine, sets the figures.
  [fast, slow] = await Promise.all([startServe('400us'), startServe('2ms')]);
});
afterAll(() => {
  fast?.child.kill('SIGKILL');
  slow?.child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

interface Figure {
  row: string;
  figure: string;
  percent: number;
  verdict: string;
}

function figure(json: { figures: Figure[] }, row: string, name: string): Figure {
  const f = json.figures.find((x) => x.row === row && x.figure === name);
  if (!f) throw new Error(`no ${row} ${name} in ${JSON.stringify(json.figures.map((x) => `${x.row} ${x.figure}`))}`);
  return f;
}

describe.each(engines())('compare, %s engine', (engine) => {
  const load = ['--engine', engine, '--mode', 'set', '-c', '4', '-P', '1', '--duration', '1500ms', '--interval', '100ms', '--warmup', '200ms', '-q'];
  const file = (name: string) => path.join(dir, `${engine}-${name}.json`);
  const save = async (name: string, port: number, extra: string[] = []) => {
    const run = await runCli(['-p', String(port), ...load, ...extra, '--json-file', file(name)]);
    expect(run.code, run.stderr).toBe(0);
    return file(name);
  };

  it('calls the slowed server worse and fails the gate (exit 5, a line per figure); two runs of one server are within noise (exit 0)', async () => {
    const base = await save('fast-1', fast.port);
    const again = await save('fast-2', fast.port);
    const slower = await save('slow', slow.port);
    // ops and the median: what the servers' queues set. A tail percentile on this shared 2-core machine is
    // mostly the machine's own pauses (a pause in one run's rounds reads as a real change).
    const gate = ['--fail-if', 'ops<-5%,p50>+10%'];

    const worse = await runCli(['compare', base, slower, ...gate, '--json', '--junit', file('junit.xml'), '--markdown', file('compare.md')]);
    expect(worse.code, worse.stderr).toBe(5);
    const w = JSON.parse(worse.stdout);
    expect(w.ratio).toBe('NEW as a percentage of BASE');
    expect(w.noise).toMatch(/^block bootstrap over the recorded intervals \(BASE \d+, NEW \d+;/);
    expect(figure(w, 'Totals', 'ops')).toMatchObject({ verdict: 'worse' });
    expect(figure(w, 'Totals', 'ops').percent).toBeLessThan(40);
    expect(figure(w, 'Totals', 'p50')).toMatchObject({ verdict: 'worse' });
    expect(worse.stderr).toMatch(/^respbench: gate missed: SET ops -\d+\.\d% \(NEW \d+ ops\/s vs BASE \d+ ops\/s, worse\) fails ops<-5%$/m);
    expect(worse.stderr).toMatch(/^respbench: gate missed: Totals ops -\d+\.\d% .* fails ops<-5%$/m);
    expect(worse.stderr).toMatch(/^respbench: gate missed: Totals p50 \+\d+\.\d% \(NEW [\d.]+ ms vs BASE [\d.]+ (ms|us), worse\) fails p50>\+10%$/m);
    expect(worse.stderr.match(/gate missed/g), worse.stderr).toHaveLength(4);
    // The port and the seeds differ: said, not refused.
    expect(worse.stderr).toMatch(/^respbench: warning: port differs: \d+ \(BASE\) vs \d+ \(NEW\)$/m);
    const schema = XmlDocument.fromString(readFileSync(path.join(REPO, 'test', 'fixtures', 'junit', 'JUnit.xsd'), 'utf8'));
    const validator = XsdValidator.fromDoc(schema);
    const junit = XmlDocument.fromString(readFileSync(file('junit.xml'), 'utf8'));
    expect(() => validator.validate(junit)).not.toThrow();
    expect(junit.get('/testsuite/@failures')?.content).toBe('2');
    expect(junit.get('/testsuite/testcase[@name="Totals"]/failure')?.content).toContain('fails ops<-5%');
    [junit, validator, schema].forEach((x) => x.dispose());
    expect(readFileSync(file('compare.md'), 'utf8')).toMatch(/^\| Totals \| \d+\.\d% \|.*\*\*missed\*\*: Totals ops/m);

    // Two results of one server: each of 3 rounds (-x 3), so the noise is the rounds' spread, which holds the
    // machine's drift from one run to the next (a single run's intervals cannot show that: on a busy machine
    // two single runs of one server differ by more than either run's intervals do). The slowed server: its
    // queue sets its rate whatever else the machine runs.
    const rounds = ['--duration', '500ms', '-x', '3'];
    const first = await save('slow-x1', slow.port, rounds);
    const second = await save('slow-x2', slow.port, rounds);
    const same = await runCli(['compare', first, second, ...gate, '--json']);
    const s = JSON.parse(same.stdout);
    expect(s.noise).toMatch(/^Welch's t-test over the rounds \(BASE 3, NEW 3;/);
    expect(figure(s, 'Totals', 'ops').verdict, same.stdout).toBe('within noise');
    // The median of a server held to its rate moves with the machine between two results (105.9% once, with a
    // 104.2-107.8% interval, in a quiet CI run): compare may call that a change, but the gate (p50>+10%) holds.
    expect(Math.abs(figure(s, 'Totals', 'p50').percent - 100), same.stdout).toBeLessThan(10);
    expect(same.code, same.stderr).toBe(0);
    // The human table names both files and the direction of the ratio.
    const human = await runCli(['compare', base, again]);
    expect(human.stdout).toContain(`BASE = ${base} (run, ${engine} engine)`);
    expect(human.stdout).toContain('ratios: NEW as a percentage of BASE; noise: block bootstrap');
    expect(human.stdout).toMatch(/^Totals\s+ops\/s\s+[\d.]+\s+[\d.]+\s+\d+\.\d%\s+\d+\.\d-\d+\.\d%\s+(within noise|better|worse)$/m);
  });

  it('--slo on a run and on a -t suite: exit 5 with a line per missed figure; -x keeps each round and their mean ± sd', async () => {
    const run = await runCli(['-p', String(slow.port), ...load.slice(0, 8), '-n', '200', '-q', '--slo', 'p99<=200us,ops>=100'], 30_000);
    expect(run.code, run.stderr).toBe(5);
    expect(run.stderr).toMatch(/^respbench: gate missed: SET p99 [\d.]+ ms misses the SLO p99<=200us$/m);
    expect(run.stderr.match(/gate missed/g)).toHaveLength(2);
    const suite = await runCli(['-p', String(fast.port), '--engine', engine, '-t', 'set,get', '-n', '400', '-c', '4', '-q', '--slo', 'ops>=1000000', '--junit', file('suite.xml')]);
    expect(suite.code, suite.stderr).toBe(5);
    expect(suite.stderr.trim().split('\n').filter((l) => l.includes('gate missed'))).toEqual([expect.stringMatching(/^respbench: gate missed: SET ops \d+ ops\/s misses the SLO ops>=1000000$/), expect.stringMatching(/^respbench: gate missed: GET ops /)]);
    expect(readFileSync(file('suite.xml'), 'utf8')).toMatch(/<testcase name="GET" classname="respbench.suite"/);

    const repeated = parseResult(readFileSync(file('slow-x1'), 'utf8'));
    expect(repeated.rounds).toHaveLength(3);
    expect(repeated.repeat.perCommand.at(-1).opsPerSec.sd).toBeGreaterThan(0);
    expect(repeated.series.length).toBeGreaterThanOrEqual(14);
    expect(repeated.opsPerSec).toBeCloseTo(repeated.requests / repeated.elapsedSec, 6);
    // -x whose first round failed (nothing listens): the failure, and no repeat line (it once printed "null").
    const refused = await runCli(['-p', String(await freePort()), '--engine', engine, '-n', '100', '-x', '2']);
    expect(refused.code).not.toBe(0);
    expect(refused.stdout).not.toMatch(/^null$/m);
    expect(refused.stdout).not.toMatch(/^-x \d+ rounds/m);
  });
});
