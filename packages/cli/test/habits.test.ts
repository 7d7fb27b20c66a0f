/**
 * What a run says before and after it runs: the header, the progress line,
 * a run whose replies were all errors, a server that closed at once, and
 * --json figures (whole numbers, null when nothing was measured).
 */
import { describe, expect, it } from 'vitest';
import { CommandEncoder, inlineForm, parseTemplate, randIntAsText, TemplateError, type Template } from '../src/engine-js/command.js';
import { KeyStream } from '../src/engine-js/keys.js';
import { ValueFactory } from '../src/engine-js/values.js';
import { formatFigures, formatHeader, formatJson, jsonView } from '../src/output.js';
import { progressText, shortDuration } from '../src/progress-line.js';
import { finishResult } from '../src/run.js';
import { planOf, rawResult } from './fixtures.js';

describe('the header', () => {
  it('names the engine, target, workload and seed, from the Plan alone (it prints before the run)', () => {
    const header = formatHeader('native', planOf(['--port', '7000', '--mode', 'set']));
    expect(header).toBe(
      'respbench · engine native · target 127.0.0.1:7000\nworkload: mode set, 1000000 requests, 1 connection, pipeline 64 (window), keyspace 100000, value 32 B, commands SET, prefix bench:key:, seed 42, verify off',
    );
  });
});

describe('the figures', () => {
  it('a run whose replies were all errors shows no rate, only the count and the first error', () => {
    const text = formatFigures(finishResult(planOf(), rawResult({ errors: 1000, ok: 0, firstError: "ERR unknown command 'rset'" })));
    expect(text).toContain('no rate: all 1000 replies were errors');
    expect(text).toContain("ERROR REPLIES: 1000, first: ERR unknown command 'rset'");
    expect(text).not.toMatch(/ops\/s/);
  });

  it('a server that closed the connection before any reply: it may have crashed, and how to check', () => {
    const r = finishResult(planOf(['--port', '7001']), rawResult({ requests: 0, failure: { kind: 'closed', message: 'connection closed by server' } }));
    expect(formatFigures(r)).toContain('hint: the server closed the connection before any reply: it may have crashed or refused the command; check that it still runs (redis-cli -h 127.0.0.1 -p 7001 PING)');
  });
});

describe('--json figures', () => {
  it('counts whole things in whole numbers', () => {
    const r = finishResult(planOf(), rawResult({ elapsedNs: 116976060.99999999, preloadElapsedNs: 0.5 }));
    expect(r.elapsedNs).toBe(116976061);
    expect(Number.isInteger(r.preloadElapsedNs)).toBe(true);
  });

  it('a run that did not start has null figures, not zeros', () => {
    const r = finishResult(planOf(), rawResult({ requests: 0, ok: 0, sets: 0, gets: 0, elapsedNs: 0, histogram: { unit: 'ns', significantDigits: 3, buckets: [] }, failure: { kind: 'connect', message: 'refused' } }));
    const json = JSON.parse(formatJson(r));
    expect(json).toMatchObject({ opsPerSec: null, avgUsPerOp: null, elapsedSec: null, elapsedNs: null, latencyUs: null, requests: 0 });
    const ran = finishResult(planOf(), rawResult());
    expect(jsonView(ran)).toBe(ran);
  });
});

describe('the progress line', () => {
  it('shows done %, rate, p99 so far, errors and the time left from the requests to go', () => {
    const text = progressText({ phase: 'run', done: 250_000, total: 1_000_000, errors: 3, elapsedNs: 5e9, p99Ns: 412_345 }, 50_000);
    expect(text).toBe('running: 25.0% · 50000 ops/s · p99 412.3 us · errors 3 · 15s left');
  });

  it('a duration-bound phase counts down its duration; without a p99 yet, none is shown', () => {
    expect(progressText({ phase: 'warmup', done: 10, total: 0, errors: 0, elapsedNs: 2e9, durationNs: 92e9 }, 5)).toBe('warmup: 2.2% · 5 ops/s · errors 0 · 1m 30s left');
    expect(shortDuration(3725)).toBe('1h 02m');
    expect(progressText({ phase: 'run', done: 1, total: 2, errors: 0, elapsedNs: 1e9, p99Ns: 32_000_000 }, 1)).toContain('p99 32.0 ms');
  });
});

describe('redis-benchmark forms in the encoder', () => {
  const values = new ValueFactory({ min: 3, max: 3 });
  const encode = (t: Template) => {
    const enc = new CommandEncoder(t, Buffer.from(''), values, 10);
    const out = Buffer.alloc(enc.maxBytes());
    return out.subarray(0, enc.encode(out, 0, 7, new KeyStream(1, 0))).toString('latin1');
  };

  it('PING_INLINE is sent inline (words and CRLF); the inline form takes no placeholders', () => {
    expect(encode(inlineForm(parseTemplate('PING', 'set', true)))).toBe('PING\r\n');
    expect(encode(inlineForm(parseTemplate('ECHO hello', 'set', true)))).toBe('ECHO hello\r\n');
    expect(() => inlineForm(parseTemplate('GET __key__', 'get', true))).toThrow(TemplateError);
  });

  it('without -r, __rand_int__ is sent as the text __rand_int__', () => {
    expect(encode(randIntAsText(parseTemplate('INCR counter:__rand_int__', 'set', true)))).toBe('*2\r\n$4\r\nINCR\r\n$20\r\ncounter:__rand_int__\r\n');
  });
});
