/**
 * `respbench merge` does not trust its input (issue 20 item 7) and heeds a
 * signal while it works (item 6). A result no run can produce — a negative
 * or fractional count, counts that disagree with their histogram, a bucket
 * beyond the histogram's range, an unknown version, a client index past the
 * client count, another unit — is refused with one line naming the file and
 * the field, exit 2. A SIGINT/SIGTERM while it reads and adds long inputs
 * ends it at once (130/143); one after the result is printed still lets the
 * --html page and --hdr-log files be written.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { open } from 'node:fs/promises';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeHistogram, hdrLib } from '../packages/cli/src/result-json.js';
import { STACK_TRACE } from './faults/harness.js';
import { writeBigResult } from './helpers/big-result.mjs';
import { runCli, spawnCli } from './helpers/servers.js';

const dir = mkdtempSync(path.join(tmpdir(), 'respbench-merge-input-'));
const file = (name: string) => path.join(dir, name);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A small valid pair of shares (machine 0 and 1 of 2). */
let base: any;
beforeAll(() => {
  writeBigResult(file('share0.json'), { megabytes: 0.05, clientIndex: 0, clientCount: 2 });
  writeBigResult(file('share1.json'), { megabytes: 0.05, clientIndex: 1, clientCount: 2 });
  base = JSON.parse(readFileSync(file('share1.json'), 'utf8'));
});

function edited(name: string, edit: (r: any) => void): string {
  const r = structuredClone(base);
  edit(r);
  const p = file(`${name}.json`);
  writeFileSync(p, JSON.stringify(r));
  return p;
}

it('the valid shares merge (exit 0): the refusals below are the edits, not the files', async () => {
  const run = await runCli(['merge', file('share0.json'), file('share1.json'), '--json']);
  expect(run.code, run.stderr).toBe(0);
  expect(JSON.parse(run.stdout).requests).toBe(base.requests * 2);
});

const BAD: { name: string; field: RegExp; edit: (r: any) => void }[] = [
  { name: 'negative-count', field: /: errors: must be a whole number/, edit: (r) => (r.errors = -5) },
  { name: 'no-time', field: /: elapsedNs: is 0 but requests is \d+: a run that answered requests took time/, edit: (r) => (r.elapsedNs = 0) },
  { name: 'fractional-count', field: /: requests: must be a whole number/, edit: (r) => (r.requests += 0.5) },
  { name: 'count-disagrees', field: /: histogram: its counts add up to \d+, but requests is \d+/, edit: (r) => ((r.requests += 1), (r.sets += 1)) },
  { name: 'set-count-disagrees', field: /: setHistogram: its counts add up to/, edit: (r) => ((r.sets += 1), (r.gets -= 1)) },
  { name: 'huge-bucket-count', field: /: histogram\.buckets\[0\]: a count must be a whole number/, edit: (r) => (r.histogram.buckets[0][1] = 1e18) },
  { name: 'bucket-past-range', field: /: histogram\.buckets\[\d+\]: a value must be whole nanoseconds below 2\^40/, edit: (r) => r.histogram.buckets.push([2 ** 62, 1]) },
  { name: 'negative-bucket-count', field: /: histogram\.buckets\[1\]: a count must be/, edit: (r) => (r.histogram.buckets[1][1] = -3) },
  { name: 'unknown-version', field: /: version: this respbench reads results of version 2, 3 \(got 99\)/, edit: (r) => (r.version = 99) },
  { name: 'index-past-count', field: /: plan\.clientIndex: must be a whole number from 0 to 1 \(plan\.clientCount is 2; got 2\)/, edit: (r) => (r.plan.clientIndex = 2) },
  { name: 'other-unit', field: /: histogram\.unit: must be "ns"/, edit: (r) => (r.histogram.unit = 'us') },
  { name: 'other-layout', field: /: getHistogram\.significantDigits: must be 3/, edit: (r) => (r.getHistogram.significantDigits = 2) },
  { name: 'interval-count-disagrees', field: /: intervals\[3\]\.setHistogram: its counts add up to/, edit: (r) => ((r.intervals[3].sets += 1), (r.intervals[3].gets -= 1)) },
  { name: 'interval-negative', field: /: intervals\[2\]\.misses: must be a whole number/, edit: (r) => (r.intervals[2].misses = -1) },
  // HdrHistogram V2 base64 (what --json writes): hdr-histogram-js wraps a word past 2^53, so 2^62 read back as a small count.
  {
    name: 'v2-bucket-count-2-62',
    field: /: histogram: a bucket's count is past 9007199254740991/,
    edit: (r) => (r.histogram = encodeHistogram({ unit: 'ns', significantDigits: 3, buckets: [...r.histogram.buckets, [5000, 2 ** 62]] })),
  },
  // A V2 histogram of a wider range with a count past 2^40 ns: the decoder dropped it without a word.
  {
    name: 'v2-bucket-past-range',
    field: /: histogram: a bucket is at or past 2\^40 ns/,
    edit: (r) => {
      const h = hdrLib().build({ bitBucketSize: 64, lowestDiscernibleValue: 1, highestTrackableValue: 2 ** 45, numberOfSignificantValueDigits: 3 });
      for (const [value, count] of r.histogram.buckets) h.recordValueWithCount(value, count);
      h.recordValue(2 ** 42);
      r.histogram = hdrLib().encodeIntoCompressedBase64(h);
      r.requests += 1;
      r.sets += 1;
    },
  },
  { name: 'ok-and-errors-past-requests', field: /: ok: ok \+ errors is \d+, more than requests \(\d+\): a reply counts once/, edit: (r) => (r.errors = 5) },
  { name: 'misses-past-gets', field: /: misses: misses \+ mismatches \+ lostWrites \+ staleReads is \d+, more than gets/, edit: (r) => (r.misses = r.gets + 1) },
  { name: 'interval-bucket-past-range', field: /: intervals\[0\]\.getHistogram\.buckets\[\d+\]: a value must be/, edit: (r) => r.intervals[0].getHistogram.buckets.push([2 ** 41, 1]) },
];

describe('merge refuses a result no run can produce: one line naming the file and the field, exit 2', () => {
  it.each(BAD)('$name', async ({ name, field, edit }) => {
    const bad = edited(name, edit);
    const run = await runCli(['merge', file('share0.json'), bad]);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toContain(`${name}.json`);
    expect(run.stderr).toMatch(field);
    expect(run.stderr).not.toMatch(STACK_TRACE);
  });

  it('a file cut short is not JSON', async () => {
    const text = readFileSync(file('share1.json'), 'utf8');
    writeFileSync(file('cut.json'), text.slice(0, Math.floor(text.length / 2)));
    const run = await runCli(['merge', file('share0.json'), file('cut.json')]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/cut\.json is not JSON/);
  });
});

describe('the merged result of long shares', () => {
  // Written by the merge before its intervals were kept packed (issue 20 item 7), on these same inputs:
  // the digest of its --json output without `meta` and `merged` (which name the files and the merge's own run).
  const OLD_MERGE_DIGEST = '49ea28081b45e183c9c1cadec1e763233e078f988cf93dda0811d5ac09cf0f22';

  it('is byte for byte what merge gave before it packed the intervals: 1,126 intervals added 2 at a time, a share started 25 ms later', async () => {
    writeBigResult(file('same0.json'), { megabytes: 4.5, clientIndex: 0, clientCount: 2 });
    writeBigResult(file('same1.json'), { megabytes: 0.5, clientIndex: 1, clientCount: 2, startedUnixMs: 1_700_000_000_025 });
    const run = await runCli(['merge', file('same0.json'), file('same1.json'), '--json']);
    expect(run.code, run.stderr).toBe(0);
    const merged = JSON.parse(run.stdout);
    expect(merged.series).toHaveLength(1126);
    expect(merged.intervals).toHaveLength(563);
    delete merged.meta;
    delete merged.merged;
    expect(createHash('sha256').update(JSON.stringify(merged)).digest('hex')).toBe(OLD_MERGE_DIGEST);
  });
});

describe('signals during a long merge', () => {
  beforeAll(() => {
    // Long enough to take a second or more to read and add (about 1,000 intervals of 10 ms, each with its percentiles).
    writeBigResult(file('long0.json'), { megabytes: 4, clientIndex: 0, clientCount: 2 });
    writeBigResult(file('long1.json'), { megabytes: 0.5, clientIndex: 1, clientCount: 2 });
  });

  it.each([
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const)('%s while it reads and adds: exit %i at once, nothing half written', async (signal, code) => {
    const html = file(`during-${signal}.html`);
    // The first input comes through a named pipe: once all of it is written, merge is surely under way.
    const fifo = file(`long0-${signal}.fifo`);
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    const { child, exited } = spawnCli(['merge', fifo, file('long1.json'), '--html', html]);
    const pipe = await open(fifo, 'w');
    await pipe.writeFile(readFileSync(file('long0.json')));
    await pipe.close();
    const sentAt = Date.now();
    child.kill(signal);
    const out = await exited;
    expect(out.code, out.stderr).toBe(code);
    expect(Date.now() - sentAt).toBeLessThan(1_500);
    expect(out.stdout).toBe('');
    expect(existsSync(html)).toBe(false);
    expect(out.stderr).toMatch(new RegExp(`${signal}: interrupted while merging`));
  });

  it('SIGINT once the result is printed: the --html page and --hdr-log files are still written, exit 130', async () => {
    const html = file('after.html');
    const { child, printed, exited } = spawnCli(['merge', file('long0.json'), file('long1.json'), '--html', html, '--hdr-log', file('after')]);
    await printed;
    child.kill('SIGINT');
    const out = await exited;
    expect(out.code, out.stderr).toBe(130);
    expect(out.stdout).toMatch(/ops\/s/);
    expect(readFileSync(html, 'utf8')).toMatch(/<\/html>\s*$/);
    expect(existsSync(file('after.Totals.run.hlog'))).toBe(true);
  });
});
