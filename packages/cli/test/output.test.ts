/** What a run prints: the human table and its problem lines, and --json. */
import { describe, expect, it } from 'vitest';
import { main } from '../src/cli.js';
import { reconnectDelayMs } from '../src/engine-js/plan.js';
import { describeWorkload, formatHuman, formatJson, hintFor } from '../src/output.js';
import { LatencyHistogram } from '../src/engine-js/histogram.js';
import { decodeHistograms } from '../src/result-json.js';
import { exitCodeFor, finishResult } from '../src/run.js';
import { planOf, rawResult } from './fixtures.js';

describe('formatHuman', () => {
  it('a clean run: header, workload, the figures row, counters', () => {
    const r = finishResult(planOf(['--requests', '1000', '--port', '7000']), rawResult());
    const lines = formatHuman(r).split('\n');
    expect(lines[0]).toBe('respbench · engine js · target 127.0.0.1:7000');
    expect(lines[1]).toBe(
      'workload: mode mixed, 1000 requests, 1 connection, pipeline 64 (window), keyspace 100000, value 32 B, set-ratio 50%, commands SET / GET, prefix bench:key:, seed 42, verify off',
    );
    expect(lines[3].trim().split(/\s{2,}/)).toEqual(['ops/s', 'avg us/op', 'elapsed s', 'p50 us', 'p90 us', 'p99 us', 'p99.9 us', 'max us']);
    const row = lines[4].trim().split(/\s+/);
    expect(row.slice(0, 3)).toEqual(['2000.00', '500.000', '0.500']);
    expect(Number(row[3])).toBeCloseTo(100, -1);
    expect(Number(row[7])).toBeCloseTo(200, -1);
    expect(lines).toContain('requests 1000/1000 · ok 1000 · errors 0 · misses 0 · mismatches 0 · sets 500 · gets 500');
    expect(lines).toContain('bytes out 123.46 kB · in 2.50 MB · latency = reply parsed - request written, per request');
    expect(lines.some((l) => /FAILED|ERROR|VERIFY|note:/.test(l))).toBe(false);
  });

  it('a refused connection is one line of reason, no table of zeros', () => {
    const r = finishResult(planOf(), rawResult({ requests: 0, failure: { kind: 'connect', message: 'connect ECONNREFUSED 127.0.0.1:6379' } }));
    expect(formatHuman(r)).toBe('respbench · engine js · target 127.0.0.1:6379\nFAILED (connect): connect ECONNREFUSED 127.0.0.1:6379');
  });

  it('error replies with a hint, mismatches, a run that broke off', () => {
    const r = finishResult(
      planOf(['--set-cmd', 'HSET']),
      rawResult({ errors: 3, firstError: "ERR wrong number of arguments for 'hset' command", mismatches: 2, firstMismatch: 'x', failure: { kind: 'timeout', message: 'no reply within 10s' } }),
    );
    const text = formatHuman(r);
    expect(text).toContain('FAILED (timeout): no reply within 10s; the figures above cover the 1000 replies received');
    expect(text).toContain("ERROR REPLIES: 3, first: ERR wrong number of arguments for 'hset' command");
    expect(text).toContain("hint: Redis's HSET takes key field value");
    expect(text).toContain('VERIFY FAILED: 2 reads returned another value; first: x');
  });

  it('get mode: misses fail --verify-get, and are a note without it', () => {
    const verified = finishResult(planOf(['--mode', 'get', '--verify-get']), rawResult({ misses: 7 }));
    expect(formatHuman(verified)).toContain('VERIFY FAILED: 7 reads found no value for a key that should exist');
    const plain = finishResult(planOf(['--mode', 'get']), rawResult({ misses: 7 }));
    expect(formatHuman(plain)).toContain('note: 7 reads found no value (nil)');
  });

  it('lost writes fail verification, pushes are shown apart, and an untracked keyspace says so', () => {
    const lost = finishResult(planOf(['--mode', 'mixed', '--verify-get']), rawResult({ lostWrites: 3, pushes: 2 }));
    const text = formatHuman(lost);
    expect(text).toContain('mismatches 0 · lost writes 3 · sets 500 · gets 500 · pushes 2 (out-of-band, not replies)');
    expect(text).toContain('VERIFY FAILED: 3 reads found no value for a key this run had written and the server had acknowledged (lost writes)');
    expect(exitCodeFor(lost)).toBe(4);
    const huge = finishResult(planOf(['--mode', 'mixed', '--verify-get', '--keyspace', String(2 ** 28)]), rawResult());
    expect(formatHuman(huge)).toContain('note: lost writes were not looked for: the keyspace is above 134217728 keys');
    expect(exitCodeFor(huge)).toBe(0);
  });

  it('stale reads (--read-from replica) are a note, counted apart, and pass verification', () => {
    const plan = { ...planOf(['--mode', 'mixed', '--verify-get']), cluster: { seeds: [], nodes: [{ host: '127.0.0.1', port: 7000 }], slots: [[0, 16383, 0]] as [number, number, number][], readFrom: 'replica' as const } };
    const stale = finishResult(plan, rawResult({ staleReads: 4 }));
    const text = formatHuman(stale);
    expect(text).toContain('mismatches 0 · stale reads 4 · sets 500');
    expect(text).toContain('note: 4 stale reads: a replica answered nil for a key written (and acknowledged by its primary) earlier in the run; replication lag under --read-from replica, not corruption');
    expect(text).not.toContain('VERIFY FAILED');
    expect(exitCodeFor(stale)).toBe(0);
  });

  it('duration, warmup, preload and rate lines', () => {
    const r = finishResult(
      planOf(['--duration', '2s', '--warmup', '1s', '--rate', '1000', '--mode', 'get']),
      rawResult({
        preloadRequests: 100,
        preloadElapsedNs: 250_000_000,
        warmupRequests: 900,
        warmupElapsedNs: 1_000_000_000,
        serviceHistogram: { unit: 'ns', significantDigits: 3, buckets: [[50_000, 1000]] },
      }),
    );
    const text = formatHuman(r);
    expect(text).toContain('mode get, for 2 s,');
    expect(text).toContain('rate 1000/s (open loop)');
    expect(text).toContain('preload: 100 writes in 0.250 s (untimed, not in the figures)');
    expect(text).toContain('warmup: 900 requests in 1.000 s (sent and answered, not in the figures)');
    expect(text).toContain('rate: asked 1000/s, achieved 2000.0/s — COULD NOT KEEP THE ASKED RATE');
    expect(text).toMatch(/service time \(from the actual send\): p50 5\d\.\d/);
    expect(text).toContain('requests 1000 · ok');
  });
});

describe('client lag', () => {
  const lagged = (lagNs: number, eventLoop: number | null) =>
    finishResult(
      planOf(['--duration', '2s', '--rate', '1000']),
      rawResult({
        serviceHistogram: { unit: 'ns', significantDigits: 3, buckets: [[50_000, 1000]] },
        scheduleLagHistogram: { unit: 'ns', significantDigits: 3, buckets: [[lagNs, 1000]] },
        eventLoopDelay: eventLoop === null ? null : { samples: 2000, p50: 1000, p99: eventLoop, max: eventLoop, mean: 1000 },
      }),
    );

  it('is shown beside the latency; small, it adds no note', () => {
    const r = lagged(5_000, 8_000);
    expect(r.clientLag).toMatchObject({ eventLoopDelayUs: { p50: 1, p99: 8, max: 8, mean: 1 }, p99: 8, distortsLatency: false });
    expect(r.clientLag.scheduleLagUs?.p99).toBeCloseTo(5, 0);
    const text = formatHuman(r);
    expect(text).toMatch(/^client lag: sent late by p50 5\.\d · p99 5\.\d · max 5\.\d us \(actual - intended send\); event loop delay p50 1\.0 · p99 8\.0 · max 8\.0 us$/m);
    expect(text).not.toContain("client's own lag");
  });

  it('over 10% of the latency p99, a note says the percentiles include the client', () => {
    // Latency p99 is 200 us (the fixture): a 30 us schedule lag distorts it.
    const late = formatHuman(lagged(30_000, null));
    expect(late).toMatch(/^note: the client's own lag \(p99 30\.\d us\) is more than 10% of the latency p99 \(200\.\d us\): the percentiles include the client's pauses, not only the server's; requests went out late/m);
    const stalled = finishResult(planOf(), rawResult({ eventLoopDelay: { samples: 500, p50: 0, p99: 2_000_000, max: 9_000_000, mean: 10 } }));
    expect(stalled.clientLag.scheduleLagUs).toBeNull();
    expect(formatHuman(stalled)).toMatch(/^note: the client's own lag \(p99 2000\.0 us\) .*; the JS engine's event loop ran late/m);
  });

  it('native and JS results without any lag figure print no lag line', () => {
    const r = finishResult(planOf(), rawResult());
    expect(r.clientLag).toEqual({ scheduleLagUs: null, eventLoopDelayUs: null, p99: 0, distortsLatency: false });
    expect(formatHuman(r)).not.toContain('client lag');
  });
});

describe('hints and the workload line', () => {
  it.each([
    ['unknown command', 'ERR unknown command', /check --set-cmd/],
    ['WRONGTYPE', 'WRONGTYPE Operation against a key', /another --key-prefix/],
    ['OOM', 'OOM command not allowed', /out of memory/],
    ['NOAUTH', 'NOAUTH Authentication required.', /password/],
  ])('%s', (_what, firstError, hint) => {
    expect(hintFor(finishResult(planOf(), rawResult({ errors: 1, firstError })))).toMatch(hint);
  });

  it('no hint for an error it does not know', () => {
    expect(hintFor(finishResult(planOf(), rawResult({ errors: 1, firstError: 'ERR something else' })))).toBeNull();
  });

  it('a value-size range and a key pattern', () => {
    const text = describeWorkload(finishResult(planOf(['-d', '8-64', '--key-pattern', 'zipf', '--mode', 'set', '-c', '4']), rawResult()));
    expect(text).toContain('4 connections');
    expect(text).toContain('value 8-64 B');
    expect(text).toContain('keys zipf');
    expect(text).not.toContain('set-ratio');
  });
});

describe('formatJson', () => {
  it('is the RunResult on one line (two-space indented when pretty) that parses back equal, histograms decoded', () => {
    // Buckets as engines write them: each at its lowest equivalent value.
    const r = finishResult(planOf(), rawResult({ histogram: LatencyHistogram.fromData(rawResult().histogram).toData() }));
    const text = formatJson(r);
    expect(text).not.toContain('\n');
    const pretty = formatJson(r, true);
    expect(pretty.split('\n')[1]).toMatch(/^ {2}"/);
    for (const t of [text, pretty]) expect(decodeHistograms(JSON.parse(t), 'result.json')).toEqual(JSON.parse(JSON.stringify(r)));
  });
});

describe('--reconnect', () => {
  it('delays double from the backoff, none before the first attempt, capped at 5 s (as the crate\'s Reconnect::delay_ms)', () => {
    const r = { attempts: 10, backoffMs: 100 };
    expect([0, 1, 2, 3, 4, 5, 6, 7, 8].map((a) => reconnectDelayMs(r, a))).toEqual([0, 100, 200, 400, 800, 1600, 3200, 5000, 5000]);
    expect(reconnectDelayMs({ attempts: 3, backoffMs: 8000 }, 2)).toBe(8000);
  });

  it('is in the plan only when asked for, with its defaults', () => {
    expect(planOf([]).reconnect).toBeUndefined();
    expect(planOf(['--reconnect']).reconnect).toEqual({ attempts: 10, backoffMs: 100 });
    expect(planOf(['--reconnect', '--reconnect-attempts', '3', '--reconnect-backoff', '2s']).reconnect).toEqual({ attempts: 3, backoffMs: 2000 });
  });

  it('a counted run that lost requests to drops is complete; the human output says what was lost, only with --reconnect', () => {
    const plan = planOf(['--reconnect', '-n', '1016']);
    const r = finishResult(plan, rawResult({ lost: 16, reconnects: 4, downNs: 12_345_678 }));
    expect(r.complete).toBe(true);
    expect(exitCodeFor(r)).toBe(0);
    expect(formatHuman(r)).toContain('reconnects 4 · down 12.3 ms (summed over connections) · lost 16 (in flight when a connection dropped; in no figure)');
    expect(formatHuman(finishResult(planOf(['-n', '1000']), rawResult()))).not.toContain('reconnects');
  });
});

describe('a failed run says its reason once (stdout the result, stderr the reason), in every output mode', () => {
  /** Port 1: nothing listens there, the connection is refused. */
  const refused = ['--port', '1', '--requests', '10', '--engine', 'js'];
  it.each([
    ['the table', [], /^FAILED \(connect\): nothing measured$/m],
    ['--json', ['--json'], /"kind":"connect"/],
    ['--quiet', ['-q'], /^FAILED \(connect\): nothing measured$/m],
    ['a -t suite', ['-t', 'set,get'], /^SET: .*\(FAILED: connect\)$/m],
  ])('%s', async (_what, extra, result) => {
    let stdout = '';
    let stderr = '';
    const io = { stdout: (t: string) => void (stdout += t), stderr: (t: string) => void (stderr += t), stderrIsTty: true };
    const code = await main([...refused, ...(extra as string[])], io);
    expect(code).toBe(1);
    expect(stdout).toMatch(result as RegExp);
    const said = (text: string) => text.split('\n').filter((l) => /connection refused by 127\.0\.0\.1:1\b/.test(l));
    expect({ stdout: extra.includes('--json') ? [] : said(stdout), stderr: said(stderr).length }).toEqual({ stdout: [], stderr: 1 });
  });
});
