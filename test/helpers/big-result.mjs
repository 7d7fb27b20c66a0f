#!/usr/bin/env node
/**
 * A large `--json` result, as a long run with a fine --interval writes one
 * (issue 20 items 6 and 7: merge's memory and its signals), made without
 * running anything: every interval holds SET and GET histograms whose counts
 * agree with its counters, and the whole agrees with its intervals, so merge
 * takes it as a real result.
 *
 *   node test/helpers/big-result.mjs OUT.json MEGABYTES CLIENT_INDEX CLIENT_COUNT
 *
 * `writeBigResult(file, { megabytes, clientIndex, clientCount })` does the same from a test.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** Buckets per interval histogram: a busy 10 ms interval of a real run has a few hundred. */
const BUCKETS = 120;
const INTERVAL_NS = 10_000_000;

function histogram(seed, buckets) {
  const out = [];
  let total = 0;
  for (let k = 0; k < buckets; k++) {
    // Distinct values of the 3-significant-digit layout (exact below 2048 ns, multiples of 64 in 65536..131072).
    const value = 65_536 + 64 * ((k * 7 + seed) % 1024);
    const count = 1 + ((k * 31 + seed) % 9);
    out.push([value, count]);
    total += count;
  }
  out.sort((a, b) => a[0] - b[0]);
  // Values can repeat for some seeds: fold them so the buckets stay distinct.
  const folded = [];
  for (const [v, c] of out) {
    if (folded.length > 0 && folded[folded.length - 1][0] === v) folded[folded.length - 1][1] += c;
    else folded.push([v, c]);
  }
  return { h: { unit: 'ns', significantDigits: 3, buckets: folded }, total };
}

function add(into, buckets) {
  for (const [v, c] of buckets) into.set(v, (into.get(v) ?? 0) + c);
}

function data(m) {
  return { unit: 'ns', significantDigits: 3, buckets: [...m.entries()].sort((a, b) => a[0] - b[0]) };
}

/** Writes the result; returns its interval count. */
export function writeBigResult(file, { megabytes, clientIndex = 0, clientCount = 2, startedUnixMs = 1_700_000_000_000 }) {
  const fd = openSync(file, 'w');
  const sets = new Map();
  const gets = new Map();
  let totals = { requests: 0, sets: 0, gets: 0 };
  let written = 0;
  const write = (text) => {
    writeSync(fd, text);
    written += text.length;
  };
  write('{"version":2,"engine":"js","intervals":[');
  let n = 0;
  // The series (which merge makes again) is about a third of a real file: the intervals are the rest.
  const target = megabytes * 1e6 * 0.7;
  while (written < target) {
    const s = histogram(n, BUCKETS);
    const g = histogram(n + 5, BUCKETS);
    add(sets, s.h.buckets);
    add(gets, g.h.buckets);
    totals = { requests: totals.requests + s.total + g.total, sets: totals.sets + s.total, gets: totals.gets + g.total };
    const interval = { index: n, startNs: n * INTERVAL_NS, endNs: (n + 1) * INTERVAL_NS, requests: s.total + g.total, sets: s.total, gets: g.total, errors: 0, misses: 0, mismatches: 0, lostWrites: 0, setHistogram: s.h, getHistogram: g.h, connections: 4 };
    write(`${n > 0 ? ',' : ''}${JSON.stringify(interval)}`);
    n++;
  }
  write('],"series":[');
  const seriesRow = { index: 0, startSec: 0, opsPerSec: 1e6, latencyUs: { p50: 100, p90: 120, p99: 150, p999: 200, max: 400, mean: 105 }, requests: 1000, errors: 0 };
  for (let k = 0; written < megabytes * 1e6; k++) write(`${k > 0 ? ',' : ''}${JSON.stringify({ ...seriesRow, index: k })}`);
  const all = new Map(sets);
  add(all, [...gets.entries()]);
  const plan = { host: '127.0.0.1', port: 6379, socket: null, tls: null, connections: 8, pipeline: 64, requests: 1_000_000, mode: 'mixed', keyspace: 100_000, keyPattern: 'uniform', keyStddev: null, zipfExponent: 0.99, valueSizeMin: 32, valueSizeMax: 32, setRatio: 50, setCmd: 'SET', getCmd: 'GET', keyPrefix: 'bench:key:', literalCommands: false, seed: 1, verifyGet: false, preload: true, threads: 1, timeoutMs: 10_000, durationMs: 60_000, warmupMs: 0, rate: 0, user: null, password: null, dbnum: null, resp3: false, clientIndex, clientCount };
  const rest = {
    ...totals,
    ok: totals.requests,
    errors: 0,
    misses: 0,
    mismatches: 0,
    lostWrites: 0,
    pushes: 0,
    bytesOut: totals.requests * 60,
    bytesIn: totals.requests * 40,
    elapsedNs: n * INTERVAL_NS,
    histogram: data(all),
    setHistogram: data(sets),
    getHistogram: data(gets),
    preloadRequests: 0,
    preloadElapsedNs: 0,
    warmupRequests: 0,
    warmupElapsedNs: 0,
    serviceHistogram: null,
    scheduleLagHistogram: null,
    eventLoopDelay: null,
    firstError: null,
    firstMismatch: null,
    failure: null,
    startedUnixMs,
    target: { host: '127.0.0.1', port: 6379 },
    plan,
    complete: true,
  };
  write(`],${JSON.stringify(rest).slice(1)}`);
  closeSync(fd);
  return n;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [file, mb, index, count] = process.argv.slice(2);
  const n = writeBigResult(file, { megabytes: Number(mb), clientIndex: Number(index ?? 0), clientCount: Number(count ?? 2) });
  process.stdout.write(`${file}: ${n} intervals\n`);
}
