/**
 * What the user sees after a run: a short header, one row of figures, the
 * counters, and one clear line for anything that went wrong.
 */
import { missingCountsAsVerifyFailure, type RunResult } from './run.js';

function fixed(n: number, digits: number): string {
  return n.toFixed(digits);
}

function bytes(n: number): string {
  if (n >= 1e9) return `${fixed(n / 1e9, 2)} GB`;
  if (n >= 1e6) return `${fixed(n / 1e6, 2)} MB`;
  if (n >= 1e3) return `${fixed(n / 1e3, 2)} kB`;
  return `${n} B`;
}

export function describeWorkload(r: RunResult): string {
  const p = r.plan;
  const size = p.valueSizeMin === p.valueSizeMax ? `${p.valueSizeMin} B` : `${p.valueSizeMin}-${p.valueSizeMax} B`;
  const cmds = p.mode === 'set' ? p.setCmd : p.mode === 'get' ? p.getCmd : `${p.setCmd} / ${p.getCmd}`;
  const parts = [
    `mode ${p.mode}`,
    p.durationMs > 0 ? `for ${p.durationMs / 1000} s` : `${p.requests} requests`,
    `${p.connections} connection${p.connections === 1 ? '' : 's'}`,
    `pipeline ${p.pipeline}`,
    `keyspace ${p.keyspace}`,
    `value ${size}`,
  ];
  if (p.mode === 'mixed') parts.push(`set-ratio ${p.setRatio}%`);
  if (p.keyPattern !== 'uniform') parts.push(`keys ${p.keyPattern}`);
  if (p.rate > 0) parts.push(`rate ${p.rate}/s (open loop)`);
  parts.push(`commands ${cmds}`, `prefix ${p.keyPrefix}`, `seed ${p.seed}`, `verify ${p.verifyGet ? 'on' : 'off'}`);
  return parts.join(', ');
}

/** Hints for error replies users meet often. */
export function hintFor(r: RunResult): string | null {
  const e = r.firstError ?? '';
  const p = r.plan;
  if (/wrong number of arguments/i.test(e) && /^\s*HSET\s*$/i.test(p.setCmd)) {
    return "Redis's HSET takes key field value: try --set-cmd 'HSET __key__ field __data__' --get-cmd 'HGET __key__ field'";
  }
  if (/wrong number of arguments/i.test(e)) return 'the server expects other arguments: give --set-cmd/--get-cmd as a template, e.g. "CMD __key__ __data__"';
  if (/unknown command/i.test(e)) return 'the server does not know this command: check --set-cmd and --get-cmd';
  if (/WRONGTYPE/.test(e)) return 'keys under this prefix hold another type: use another --key-prefix, or FLUSHALL a test server';
  if (/^OOM/.test(e)) return 'the server is out of memory (maxmemory reached): lower --keyspace or --value-size, or raise maxmemory';
  if (/NOAUTH/.test(e)) return 'the server requires a password';
  return null;
}

/** Where the run went, as the header says it: host:port, with TLS, or a unix socket path. */
export function targetText(r: Pick<RunResult, 'target' | 'plan'>): string {
  if (r.plan?.socket) return `${r.plan.socket} (unix socket)`;
  return `${r.target.host}:${r.target.port}${r.plan?.tls ? ' (TLS)' : ''}`;
}

export function formatHuman(r: RunResult): string {
  const lines: string[] = [];
  if (r.failure?.kind === 'connect') {
    // Nothing was measured: a table of zeros would only hide the reason.
    return `respbench · engine ${r.engine} · target ${targetText(r)}\nFAILED (connect): ${r.failure.message}`;
  }
  lines.push(`respbench · engine ${r.engine} · target ${targetText(r)}`);
  lines.push(`workload: ${describeWorkload(r)}`);
  if (r.preloadRequests > 0) lines.push(`preload: ${r.preloadRequests} writes in ${fixed(r.preloadElapsedSec, 3)} s (untimed, not in the figures)`);
  if (r.plan.warmupMs > 0) lines.push(`warmup: ${r.warmupRequests} requests in ${fixed((r.warmupElapsedNs ?? 0) / 1e9, 3)} s (sent and answered, not in the figures)`);
  lines.push('');
  const head = ['ops/s', 'avg us/op', 'elapsed s', 'p50 us', 'p90 us', 'p99 us', 'p99.9 us', 'max us'];
  const l = r.latencyUs;
  const row = [fixed(r.opsPerSec, 2), fixed(r.avgUsPerOp, 3), fixed(r.elapsedSec, 3), fixed(l.p50, 1), fixed(l.p90, 1), fixed(l.p99, 1), fixed(l.p999, 1), fixed(l.max, 1)];
  const widths = head.map((h, i) => Math.max(h.length, row[i].length));
  lines.push(head.map((h, i) => h.padStart(widths[i])).join('  '));
  lines.push(row.map((v, i) => v.padStart(widths[i])).join('  '));
  lines.push('');
  if (r.serviceUs) {
    const sv = r.serviceUs;
    lines.push(`latency above counts from each request's intended send time; service time (from the actual send): p50 ${fixed(sv.p50, 1)} · p90 ${fixed(sv.p90, 1)} · p99 ${fixed(sv.p99, 1)} · p99.9 ${fixed(sv.p999, 1)} · max ${fixed(sv.max, 1)} us`);
    lines.push(`rate: asked ${r.plan.rate}/s, achieved ${fixed(r.opsPerSec, 1)}/s${r.rateKept === false ? ' — COULD NOT KEEP THE ASKED RATE (more than 2% off: server or client too slow, --pipeline too small, or a run too short for the schedule)' : ''}`);
  }
  lines.push(
    `requests ${r.requests}${r.plan.durationMs > 0 ? '' : `/${r.plan.requests}`} · ok ${r.ok} · errors ${r.errors} · misses ${r.misses} · mismatches ${r.mismatches} · sets ${r.sets} · gets ${r.gets}`,
  );
  lines.push(`bytes out ${bytes(r.bytesOut)} · in ${bytes(r.bytesIn)} · latency = reply parsed - request written, per request`);
  if (r.failure) lines.push(`FAILED (${r.failure.kind}): ${r.failure.message}; the figures above cover the ${r.requests} replies received`);
  if (r.errors > 0) {
    lines.push(`ERROR REPLIES: ${r.errors}, first: ${r.firstError}`);
    const hint = hintFor(r);
    if (hint) lines.push(`hint: ${hint}`);
  }
  if (r.mismatches > 0) lines.push(`VERIFY FAILED: ${r.mismatches} reads returned another value; first: ${r.firstMismatch}`);
  if (missingCountsAsVerifyFailure(r)) lines.push(`VERIFY FAILED: ${r.misses} reads found no value for a key that should exist`);
  else if (r.misses > 0 && r.plan.mode === 'get') lines.push(`note: ${r.misses} reads found no value (nil)`);
  return lines.join('\n');
}

/** The RunResult for --json, histogram included, stable field names. */
export function formatJson(r: RunResult): string {
  return JSON.stringify(r, null, 2);
}
