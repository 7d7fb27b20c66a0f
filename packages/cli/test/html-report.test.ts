/** The --html run page says what the terminal says, with the same names, and nothing the run did not do. */
import { runHtml } from '@respbench/report';
import { describe, expect, it } from 'vitest';
import { runPageOf } from '../src/html-report.js';
import { formatFigures } from '../src/output.js';
import { finishResult } from '../src/run.js';
import { planOf, rawResult } from './fixtures.js';

describe('the --html run page', () => {
  it('names its two averages as the terminal does: avg us/op (elapsed / requests) apart from the mean latency', () => {
    const r = finishResult(planOf(['--requests', '1000']), rawResult());
    const page = runPageOf(r);
    expect(page.table.header.slice(0, 5)).toEqual(['command', 'requests', 'ops/s', 'avg us/op', 'mean latency us']);
    expect(page.table.header).not.toContain('avg us');
    // The terminal's avg us/op is the same figure under the same name: 0.5 s / 1000 requests = 500 us.
    expect(formatFigures(r)).toMatch(/avg us\/op/);
    const totals = page.table.rows.find((row) => row[0] === 'Totals') ?? page.table.rows[0];
    expect(totals[3]).toBe('500.000');
    expect(Number(totals[4])).toBeCloseTo(150, 0);
  });

  it('on a --rate run the latency caption counts from the intended send time; closed loop, from the write', () => {
    const open = runHtml(runPageOf(finishResult(planOf(['--rate', '1000', '--duration', '1s']), rawResult())));
    expect(open).toContain("latency from each request's intended send time (--rate's schedule) to reply parsed");
    expect(open).not.toContain('latency from request written');
    const closed = runHtml(runPageOf(finishResult(planOf(['--requests', '1000']), rawResult())));
    expect(closed).toContain('latency from request written to reply parsed');
  });

  it('the Plan block of a --duration run has no request count (the default bounds nothing there)', () => {
    const timed = runPageOf(finishResult(planOf(['--duration', '2s']), rawResult()));
    expect(JSON.parse(timed.plan)).not.toHaveProperty('requests');
    expect(JSON.parse(timed.plan)).toMatchObject({ durationMs: 2000 });
    const counted = runPageOf(finishResult(planOf(['--requests', '1000']), rawResult()));
    expect(JSON.parse(counted.plan)).toMatchObject({ requests: 1000 });
  });
});
