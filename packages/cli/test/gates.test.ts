/**
 * CI gates (issue 22 Deliver 2): one condition grammar for capacity's
 * --slo, a run's --slo and compare's --fail-if; a case per command with a
 * line per missed figure; the JUnit file valid against the Ant/Jenkins
 * JUnit XSD (test/fixtures/junit/JUnit.xsd, validated by libxml2) and the
 * Markdown a table a real renderer (marked) makes a <table> of.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { XmlDocument, XsdValidator } from 'libxml2-wasm';
import { marked } from 'marked';
import { describe, expect, it } from 'vitest';
import { LatencyHistogram } from '../src/engine-js/histogram.js';
import { parseCondition, parseSlo } from '../src/capacity/slo.js';
import { gateMarkdown, junitXml, runColumns, writeGateReports, type GateReport } from '../src/gate-reports.js';
import { compareGateCases, parseFailIf, parseRunSlo, runGateCases } from '../src/gates.js';
import type { Comparison } from '../src/compare/compare.js';
import { finishResult } from '../src/run.js';
import { UsageError } from '../src/usage-error.js';
import { planOf, rawResult } from './fixtures.js';

const XSD = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'test', 'fixtures', 'junit', 'JUnit.xsd');

function histogram(values: number[]) {
  const h = new LatencyHistogram();
  for (const v of values) h.record(v);
  return h.toData();
}

/** A mixed run: SET at 100 us, GET at 2 ms, 1000 each over 0.5 s. */
function mixedRun(errors = 0) {
  const set = histogram(Array.from({ length: 1000 }, () => 100_000));
  const get = histogram(Array.from({ length: 1000 }, () => 2_000_000));
  const all = histogram([...Array.from({ length: 1000 }, () => 100_000), ...Array.from({ length: 1000 }, () => 2_000_000)]);
  return finishResult(planOf(['--mode', 'mixed']), rawResult({ requests: 2000, sets: 1000, gets: 1000, errors, histogram: all, setHistogram: set, getHistogram: get }));
}

describe('one condition grammar', () => {
  it('reads latency, rate, share and change conditions', () => {
    expect(parseCondition('p99<=1ms')).toMatchObject({ figure: 'p99', percentile: 99, op: '<=', kind: 'latency', value: 1000 });
    expect(parseCondition('p99.9<500us')).toMatchObject({ figure: 'p99.9', kind: 'latency', value: 500 });
    expect(parseCondition('ops>=100000')).toMatchObject({ figure: 'ops', op: '>=', kind: 'rate', value: 100000 });
    expect(parseCondition('errors<=0.1%')).toMatchObject({ kind: 'share', value: 0.001 });
    expect(parseCondition('ops<-5%')).toMatchObject({ kind: 'change', op: '<', value: -0.05 });
    expect(parseCondition('p99>+10%')).toMatchObject({ kind: 'change', op: '>', value: 0.1 });
    for (const bad of ['p99<=1', 'ops>=1ms', 'errors<=3', 'latency<1ms', 'p99=1ms', 'errors<+1%']) expect(parseCondition(bad), bad).toBeNull();
  });

  it('each flag takes the kinds it means, naming itself when not', () => {
    expect(parseRunSlo('p99<=1ms, ops>=100000,errors<=0.1%')).toHaveLength(3);
    expect(() => parseRunSlo('ops<-5%')).toThrow(/^--slo takes .*cannot read "ops<-5%"/);
    expect(parseFailIf('ops<-5%,p99>+10%')).toHaveLength(2);
    expect(() => parseFailIf('p99<=1ms')).toThrow(/^--fail-if takes .*cannot read "p99<=1ms"/);
    expect(() => parseRunSlo('p101<=1ms')).toThrow(UsageError);
    // capacity's SLO is still latency bounds from above and errors only.
    expect(parseSlo('p99<=1ms,errors<=0.1%').latency[0]).toEqual({ percentile: 99, name: 'p99', maxUs: 1000 });
    expect(() => parseSlo('p99<=1ms,ops>=1000')).toThrow(/cannot read "ops>=1000"/);
  });
});

describe('a run against --slo', () => {
  it('a case per command and Totals, a line per missed figure; errors are judged on Totals', () => {
    const cases = runGateCases(mixedRun(10), parseRunSlo('p99<=1ms,ops>=1500,errors<=0.1%'));
    expect(cases.map((c) => c.name)).toEqual(['SET', 'GET', 'Totals']);
    expect(cases[0].missed).toEqual([]);
    expect(cases[1].missed).toEqual(['GET p99 2.001 ms misses the SLO p99<=1ms']);
    expect(cases[2].missed).toEqual(['Totals p99 2.001 ms misses the SLO p99<=1ms', 'Totals errors 0.5% misses the SLO errors<=0.1%']);
  });

  it('a percentile the result did not list is read off the histogram', () => {
    const [set] = runGateCases(mixedRun(), parseRunSlo('p75<=50us'));
    expect(set.missed).toEqual(['SET p75 100 us misses the SLO p75<=50us']);
  });
});

describe('compare against --fail-if', () => {
  const comparison = (verdict: 'worse' | 'within noise' | 'no noise estimate'): Comparison =>
    ({ figures: [{ row: 'Totals', figure: 'p99', base: 1000, next: 1200, percent: 120, interval: null, verdict }, { row: 'Totals', figure: 'ops', base: 1000, next: 990, percent: 99, interval: null, verdict: 'within noise' }] }) as unknown as Comparison;
  it('fails a change past the bound unless the noise explains it', () => {
    const gates = parseFailIf('ops<-5%,p99>+10%');
    expect(compareGateCases(comparison('worse'), gates)[0].missed).toEqual(['Totals p99 +20.0% (NEW 1.2 ms vs BASE 1 ms, worse) fails p99>+10%']);
    expect(compareGateCases(comparison('no noise estimate'), gates)[0].missed).toHaveLength(1);
    expect(compareGateCases(comparison('within noise'), gates)[0].missed).toEqual([]);
  });
});

describe('the reports', () => {
  const report = (): GateReport => {
    const gates = parseRunSlo('p99<=1ms,errors<=0.1%');
    return { title: 'respbench run', classname: 'respbench.run', gates: 'p99<=1ms,errors<=0.1%', cases: runGateCases(mixedRun(10), gates), columns: runColumns(gates.map((g) => g.figure)), startedUnixMs: Date.UTC(2026, 11, 1, 22, 0, 0, 123) };
  };

  it('the JUnit XML is valid against the JUnit XSD: a testcase per command, failures with the missed lines', () => {
    const text = junitXml(report());
    const schema = XmlDocument.fromString(readFileSync(XSD, 'utf8'));
    const validator = XsdValidator.fromDoc(schema);
    const doc = XmlDocument.fromString(text);
    expect(() => validator.validate(doc)).not.toThrow();
    expect(doc.get('/testsuite/@tests')?.content).toBe('3');
    expect(doc.get('/testsuite/@failures')?.content).toBe('2');
    expect(doc.find('/testsuite/testcase').map((n) => (n as unknown as { attr(name: string): { value: string } | null }).attr('name')?.value)).toEqual(['SET', 'GET', 'Totals']);
    expect(doc.get('/testsuite/testcase[@name="Totals"]/failure')?.content).toBe('Totals p99 2.001 ms misses the SLO p99<=1ms\nTotals errors 0.5% misses the SLO errors<=0.1%');
    // A case name with characters XML must escape stays valid.
    const hostile = junitXml({ ...report(), cases: [{ name: 'GET <"&">\u0001', figures: {}, missed: ['a < b & "c"'], seconds: 1 }] });
    expect(() => validator.validate(XmlDocument.fromString(hostile))).not.toThrow();
    doc.dispose();
    validator.dispose();
    schema.dispose();
  });

  it('the Markdown renders as a table: a row per command, the missed lines in the gate column', () => {
    const html = marked.parse(gateMarkdown(report()), { async: false });
    const rows = [...html.matchAll(/<tr>([\s\S]*?)<\/tr>/g)].map((m) => [...m[1].matchAll(/<t[hd][^>]*>([\s\S]*?)<\/t[hd]>/g)].map((c) => c[1]));
    expect(rows[0]).toEqual(['', 'ops/s', 'p50 us', 'p99 us', 'errors', 'gate']);
    expect(rows.slice(1).map((r) => r[0])).toEqual(['SET', 'GET', 'Totals']);
    expect(rows[1][5]).toBe('met');
    expect(rows[3][5]).toContain('<strong>missed</strong>: Totals p99 2.001 ms misses the SLO p99&lt;=1ms; Totals errors 0.5%');
  });

  it('without --markdown the table is appended to $GITHUB_STEP_SUMMARY when set; --markdown writes its file instead', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'respbench-summary-'));
    try {
      const summary = path.join(dir, 'summary.md');
      writeFileSync(summary, '## earlier step\n');
      writeGateReports(report(), {}, { GITHUB_STEP_SUMMARY: summary });
      const text = readFileSync(summary, 'utf8');
      expect(text.startsWith('## earlier step\n### respbench run: 2 of 3 missed a gate\n')).toBe(true);
      const own = path.join(dir, 'own.md');
      writeGateReports(report(), { markdown: own }, { GITHUB_STEP_SUMMARY: summary });
      expect(readFileSync(summary, 'utf8')).toBe(text);
      expect(readFileSync(own, 'utf8')).toBe(gateMarkdown(report()));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
