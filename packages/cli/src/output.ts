/**
 * What the user sees after a run: a short header, one row of figures, the
 * counters, and one clear line for anything that went wrong. Text from the
 * user or the server goes through printable(): a control character in a
 * key prefix or an error reply never reaches the terminal raw.
 */
import { resultJsonText } from './result-json.js';
import { readTarget, type EngineName, type Plan } from './engine-js/plan.js';
import { tracksWrittenKeys } from './engine-js/request-source.js';
import { WRITTEN_KEYS_MAX_KEYSPACE } from './engine-js/values.js';
import { printable, printableTarget } from './printable.js';
import { CLIENT_LAG_SHARE, missingCountsAsVerifyFailure, notStarted, SLOW_CONNECT_MS, type RunResult } from './run.js';

function fixed(n: number, digits: number): string {
  return n.toFixed(digits);
}

function bytes(n: number): string {
  if (n >= 1e9) return `${fixed(n / 1e9, 2)} GB`;
  if (n >= 1e6) return `${fixed(n / 1e6, 2)} MB`;
  if (n >= 1e3) return `${fixed(n / 1e3, 2)} kB`;
  return `${n} B`;
}

/** The workload line of a Plan (also accepts a RunResult, for its plan). */
export function describeWorkload(of: RunResult | Plan): string {
  const p = 'plan' in of ? of.plan : of;
  const size = p.valueSizeMin === p.valueSizeMax ? `${p.valueSizeMin} B` : `${p.valueSizeMin}-${p.valueSizeMax} B`;
  const mix = p.commands ?? [];
  const cmds = printable(p.mode === 'set' ? p.setCmd : p.mode === 'get' ? p.getCmd : `${p.setCmd} / ${p.getCmd}`);
  const mixText = () => printable(mix.map((c) => `${c.weight} × ${c.template}${c.keyPattern ? ` (keys ${c.keyPattern})` : ''}`).join(' / '));
  const parts = [
    // A command on the command line (literal, as redis-benchmark) has no mode of its own.
    p.literalCommands ? `command ${p.setCmd}` : mix.length > 0 ? `mix ${mixText()}` : `mode ${p.mode}`,
    p.durationMs > 0 ? `for ${p.durationMs / 1000} s` : `${p.requests} requests`,
    `${p.connections} connection${p.connections === 1 ? '' : 's'}${p.rampConnections ? ` (from ${p.rampConnections.start}, ${p.rampConnections.step} more every ${p.rampConnections.everyMs / 1000} s)` : ''}`,
    // With one request in flight the two modes are the same.
    p.pipeline === 1 ? 'pipeline 1' : `pipeline ${p.pipeline} ${p.pipelineMode === 'batch' ? '(batch: send N, wait for all N)' : '(window)'}`,
    p.randIntLiteral ? 'keys as written (no -r: __rand_int__ stays literal)' : `keyspace ${p.keyspace}`,
    `value ${size}`,
  ];
  if (p.mode === 'mixed' && mix.length === 0) parts.push(`set-ratio ${p.setRatio}%`);
  if (p.keyPattern !== 'uniform') parts.push(`keys ${p.keyPattern}`);
  if (p.rate > 0) parts.push(`rate ${p.rate}/s (open loop)`);
  // Who we logged in as, never the password.
  if (p.password !== null) parts.push(`auth ${printable(p.user ?? 'default')}`);
  if (p.dbnum !== null) parts.push(`db ${p.dbnum}`);
  if (p.resp3) parts.push('RESP3');
  if (!p.literalCommands) parts.push(...(mix.length > 0 ? [] : [`commands ${cmds}`]), `prefix ${printable(p.keyPrefix)}`);
  parts.push(`seed ${p.seed}`, `verify ${p.verifyGet ? 'on' : 'off'}`);
  return parts.join(', ');
}

/** Hints for error replies users meet often. */
export function hintFor(r: RunResult): string | null {
  const e = r.firstError ?? '';
  const p = r.plan;
  if (!p.cluster && /^(MOVED|ASK) \d+ /.test(e)) {
    return `the server is a Redis Cluster node (it answered ${e.split(' ')[0]}): add --cluster to send each key to the node that owns its slot`;
  }
  if (!p.cluster && /^CLUSTERDOWN\b/.test(e)) return 'the server is a Redis Cluster node whose cluster is down: wait for cluster_state:ok (CLUSTER INFO), then run with --cluster';
  if (/wrong number of arguments/i.test(e) && /^\s*HSET\s*$/i.test(p.setCmd)) {
    return "Redis's HSET takes key field value: try --set-cmd 'HSET __key__ field __data__' --get-cmd 'HGET __key__ field'";
  }
  if (/wrong number of arguments/i.test(e)) return 'the server expects other arguments: give --set-cmd/--get-cmd as a template, e.g. "CMD __key__ __data__"';
  if (/unknown command/i.test(e)) return 'the server does not know this command: check --set-cmd and --get-cmd';
  if (/WRONGTYPE/.test(e)) return 'keys under this prefix hold another type: use another --key-prefix, or FLUSHALL a test server';
  if (/^OOM/.test(e)) return 'the server is out of memory (maxmemory reached): lower --keyspace or --value-size, or raise maxmemory';
  if (/NOAUTH/.test(e)) return 'the server requires a password: give it with -a/--pass or REDISCLI_AUTH';
  return null;
}

/** Where the run went, as the header says it: host:port, with TLS, or a unix socket path. */
export function targetText(r: Pick<RunResult, 'target' | 'plan'>): string {
  if (r.plan?.socket) return `${printable(r.plan.socket)} (unix socket)`;
  return `${printableTarget(r.target.host, r.target.port)}${r.plan?.tls ? ' (TLS)' : ''}`;
}

/** What a run prints before it starts: engine, target, workload, seed. */
export function formatHeader(engine: EngineName, plan: Plan): string {
  return `respbench · engine ${engine} · target ${targetText({ target: { host: plan.host, port: plan.port }, plan })}${clusterText(plan)}\nworkload: ${describeWorkload(plan)}`;
}

/** --cluster: how many primaries and sockets, after the target. */
export function clusterText(plan: Plan): string {
  const c = plan.cluster;
  if (!c) return '';
  const n = c.nodes.length;
  const sockets = n * plan.connections;
  let replicaSockets = 0;
  if (c.readFrom && c.readFrom !== 'primary' && !(plan.mode === 'set' && !plan.commands?.length)) {
    for (let id = 0; id < plan.connections; id++) for (let i = 0; i < n; i++) if (readTarget(c, id, i) >= 0) replicaSockets++;
  }
  const reads = replicaSockets > 0 ? ` + ${replicaSockets} READONLY to replicas (--read-from ${c.readFrom})` : '';
  return ` · cluster: ${n} primar${n === 1 ? 'y' : 'ies'} × ${plan.connections} connection${plan.connections === 1 ? '' : 's'} = ${sockets} sockets${reads} (${c.nodes.map((x) => printableTarget(x.host, x.port)).join(', ')})`;
}

/** --cluster: a row per primary (ops/s, errors, p50/p99), so a hot shard shows. */
export function nodeLines(r: RunResult, latencyDecimals = 1): string[] {
  const rows = r.perNode ?? [];
  if (rows.length === 0) return [];
  const head = ['node', 'requests', 'ops/s', 'errors', 'redirections', 'p50 us', 'p99 us'];
  const cells = rows.map((n) => [printable(n.node), String(n.requests), fixed(n.opsPerSec, 2), String(n.errors), String(n.redirections), fixed(n.p50Us, latencyDecimals), fixed(n.p99Us, latencyDecimals)]);
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((row) => row[i].length)));
  const line = (row: string[]) => row.map((v, i) => (i === 0 ? v.padEnd(widths[i]) : v.padStart(widths[i]))).join('  ');
  return ['', line(head), ...cells.map(line)];
}

/** The header and the figures together, as one block (the header first). */
export function formatHuman(r: RunResult): string {
  if (r.failure?.kind === 'connect' || r.failure?.kind === 'auth') {
    // Nothing was measured (or, once the server said NOAUTH/NOPERM, nothing
    // worth a rate): a table of figures would only hide the reason.
    return `respbench · engine ${r.engine} · target ${targetText(r)}\n${formatFigures(r)}`;
  }
  return `${formatHeader(r.engine, r.plan)}\n${formatFigures(r)}`;
}

/** A connection the server closed before any reply: the likeliest story, and how to check it. */
export function closedEarlyHint(r: RunResult): string | null {
  if (r.failure?.kind !== 'closed' || r.requests > 0) return null;
  const { host, port } = r.target;
  return `the server closed the connection before any reply: it may have crashed or refused the command; check that it still runs (redis-cli -h ${printable(host)} -p ${port} PING) and look at its log`;
}

/** A connect phase of seconds: the server was slow to accept or to answer the handshake (untimed, not in the figures). */
export function slowConnectLine(r: Pick<RunResult, 'connectElapsedNs' | 'plan'>): string {
  return `slow connect: ${fixed((r.connectElapsedNs ?? 0) / 1e9, 3)} s to open ${r.plan.connections} connection${r.plan.connections === 1 ? '' : 's'} and their handshakes before the first request (the server was slow to accept; untimed, not in the figures)`;
}

/**
 * How a failed run's reason is shown: `with` the figures (a saved result
 * printed again: merge, the HTML page), or `elsewhere` — a run as it ends
 * says the reason once, on stderr (failureLines), in every output mode, and
 * stdout's FAILED line only marks the result as failed.
 */
export type ReasonPlace = 'with' | 'elsewhere';

/**
 * What a run prints after it ends: the figures row, the counters, and what
 * went wrong. `latencyDecimals`: the latency columns' decimal places
 * (--precision, as redis-benchmark's).
 */
export function formatFigures(r: RunResult, reason: ReasonPlace = 'with', latencyDecimals = 1): string {
  const lines: string[] = [];
  // An interruption is not a failure stderr reports: its story stays on this line.
  const inline = reason === 'with' || r.failure?.kind === 'interrupted';
  const because = (text: string) => (inline ? `${printable(r.failure?.message ?? '')}${text ? `; ${text}` : ''}` : text || 'the reason is on stderr');
  if (r.failure?.kind === 'connect' || r.failure?.kind === 'auth') return `FAILED (${r.failure.kind}): ${because(inline ? '' : 'nothing measured')}`;
  if ((r.connectElapsedNs ?? 0) >= SLOW_CONNECT_MS * 1e6) lines.push(slowConnectLine(r));
  if (r.preloadRequests > 0) lines.push(`preload: ${r.preloadRequests} writes in ${fixed(r.preloadElapsedSec, 3)} s (untimed, not in the figures)`);
  if (r.plan.warmupMs > 0) lines.push(`warmup: ${r.warmupRequests} requests in ${fixed((r.warmupElapsedNs ?? 0) / 1e9, 3)} s (sent and answered, not in the figures)`);
  lines.push('');
  if (r.requests > 0 && r.errors === r.requests) {
    // The rate of error replies is not the server's rate for the command.
    lines.push(`no rate: all ${r.errors} replies were errors`);
  } else if (notStarted(r)) {
    // Zeros would read like a measurement (as --json's nulls say).
    lines.push('no figures: no reply was received');
  } else {
    const l = r.latencyUs;
    const ps = percentileColumns(r.percentilesUs, l);
    const head = ['ops/s', 'avg us/op', 'elapsed s', ...ps.map(([k]) => `${k} us`), 'max us'];
    const row = [fixed(r.opsPerSec, 2), fixed(r.avgUsPerOp, 3), fixed(r.elapsedSec, 3), ...ps.map(([, v]) => fixed(v, latencyDecimals)), fixed(l.max, latencyDecimals)];
    const widths = head.map((h, i) => Math.max(h.length, row[i].length));
    lines.push(head.map((h, i) => h.padStart(widths[i])).join('  '));
    lines.push(row.map((v, i) => v.padStart(widths[i])).join('  '));
    lines.push(...perCommandLines(r, latencyDecimals));
    lines.push(...nodeLines(r, latencyDecimals));
  }
  lines.push('');
  if (r.serviceUs) {
    const sv = r.serviceUs;
    lines.push(`latency above counts from each request's intended send time; service time (from the actual send): p50 ${fixed(sv.p50, 1)} · p90 ${fixed(sv.p90, 1)} · p99 ${fixed(sv.p99, 1)} · p99.9 ${fixed(sv.p999, 1)} · max ${fixed(sv.max, 1)} us`);
    lines.push(`rate: asked ${r.plan.rate}/s, achieved ${fixed(r.opsPerSec, 1)}/s${r.rateKept === false ? ' — COULD NOT KEEP THE ASKED RATE (more than 2% off: server or client too slow, --pipeline too small, or a run too short for the schedule)' : ''}`);
  }
  lines.push(...clientLagLines(r));
  lines.push(
    `requests ${r.requests}${r.plan.durationMs > 0 ? '' : `/${r.plan.requests}`} · ok ${r.ok} · errors ${r.errors} · misses ${r.misses} · mismatches ${r.mismatches}${r.lostWrites > 0 ? ` · lost writes ${r.lostWrites}` : ''}${(r.staleReads ?? 0) > 0 ? ` · stale reads ${r.staleReads}` : ''} · sets ${r.sets} · gets ${r.gets}${r.pushes > 0 ? ` · pushes ${r.pushes} (out-of-band, not replies)` : ''}`,
  );
  lines.push(`bytes out ${bytes(r.bytesOut)} · in ${bytes(r.bytesIn)} · latency = reply parsed - request written, per request`);
  if (r.reconnects !== undefined) lines.push(reconnectLine(r));
  if (r.redirections) {
    const d = r.redirections;
    lines.push(`cluster redirections: MOVED ${d.moved} · ASK ${d.ask} · TRYAGAIN/CLUSTERDOWN ${d.tryagain} (each request sent again where the cluster said; its latency includes the hops)`);
  }
  if (r.topologyRejected) lines.push(`note: a topology refresh was refused, the slot map from before kept: ${printable(r.topologyRejected)}`);
  if (r.failure) lines.push(`FAILED (${r.failure.kind}): ${because(notStarted(r) ? 'nothing was measured' : `the figures above cover the ${r.requests} replies received`)}`);
  if (r.interrupted) {
    const i = r.interrupted;
    const counts = i.unanswered === null ? '' : `: ${i.sent} requests sent, ${i.unanswered} of them left unanswered (in no figure)`;
    lines.push(`interrupted by ${i.signal}${counts}`);
  }
  const closed = closedEarlyHint(r);
  if (closed) lines.push(`hint: ${closed}`);
  if (r.errors > 0) {
    lines.push(`ERROR REPLIES: ${r.errors}, first: ${printable(r.firstError ?? '')}`);
    const hint = hintFor(r);
    if (hint) lines.push(`hint: ${hint}`);
  }
  if (r.mismatches > 0) lines.push(`VERIFY FAILED: ${r.mismatches} reads returned another value; first: ${printable(r.firstMismatch ?? '')}`);
  if (r.lostWrites > 0) lines.push(`VERIFY FAILED: ${r.lostWrites} reads found no value for a key this run had written and the server had acknowledged (lost writes)`);
  else if (r.plan.verifyGet && r.plan.mode === 'mixed' && !tracksWrittenKeys(r.plan)) {
    lines.push(`note: lost writes were not looked for: the keyspace is above ${WRITTEN_KEYS_MAX_KEYSPACE} keys (one bit per key), so a nil read counts as a miss`);
  }
  if ((r.staleReads ?? 0) > 0) {
    lines.push(`note: ${r.staleReads} stale reads: a replica answered nil for a key written (and acknowledged by its primary) earlier in the run; replication lag under --read-from ${r.plan.cluster?.readFrom}, not corruption: counted apart, not as lost writes or mismatches`);
  }
  if (missingCountsAsVerifyFailure(r)) lines.push(`VERIFY FAILED: ${r.misses} reads found no value for a key that should exist`);
  else if (r.misses > 0 && r.plan.mode === 'get') lines.push(`note: ${r.misses} reads found no value (nil)`);
  return lines.join('\n');
}

/** --reconnect: how often connections dropped and came back, how long they were down, what they lost. */
export function reconnectLine(r: RunResult): string {
  const down = fixed((r.downNs ?? 0) / 1e6, 1);
  return `reconnects ${r.reconnects ?? 0} · down ${down} ms (summed over connections) · lost ${r.lost ?? 0} (in flight when a connection dropped; in no figure)`;
}

/**
 * The table's percentile columns: the ones asked for (--percentiles), or,
 * for a result without them, p50/p90/p99/p99.9 from its latency summary.
 */
function percentileColumns(asked: Record<string, number> | undefined, l: RunResult['latencyUs']): [string, number][] {
  if (asked && Object.keys(asked).length > 0) return Object.entries(asked);
  return [['p50', l.p50], ['p90', l.p90], ['p99', l.p99], ['p99.9', l.p999]];
}

/**
 * A failed run's reason, for stderr: the one place a run says why it
 * failed, whether stdout carries the table or --json. Its hint goes with
 * the figures (a `hint:` line); with --json, which has no such line, here.
 * An interrupted run's story is the FAILED (interrupted) line itself.
 */
export function failureLines(r: RunResult, json: boolean): string[] {
  if (!r.failure || r.failure.kind === 'interrupted') return [];
  const hint = json ? closedEarlyHint(r) : null;
  return [`respbench: ${printable(r.failure.message)}`, ...(hint ? [`respbench: ${hint}`] : [])];
}

/**
 * The figures per command (memtier's Sets/Gets/Totals), below the main row:
 * a row per command the run sent, then Totals. Nothing when the result has
 * no per-command histograms (one written before they existed).
 */
export function perCommandLines(r: RunResult, latencyDecimals = 1): string[] {
  const rows = r.perCommand ?? [];
  if (rows.length < 2) return [];
  const keys = percentileColumns(r.percentilesUs, r.latencyUs).map(([k]) => k);
  const head = ['command', 'requests', 'ops/s', ...keys.map((k) => `${k} us`), 'max us'];
  const cells = rows.map((c) => {
    const ps = percentileColumns(c.percentilesUs, c.latencyUs);
    return [printable(c.command), String(c.requests), fixed(c.opsPerSec, 2), ...ps.map(([, v]) => fixed(v, latencyDecimals)), fixed(c.latencyUs.max, latencyDecimals)];
  });
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((row) => row[i].length)));
  const line = (row: string[]) => row.map((v, i) => (i === 0 ? v.padEnd(widths[i]) : v.padStart(widths[i]))).join('  ');
  return ['', line(head), ...cells.map(line)];
}

/** The client's own lateness beside the latency, and a note when it is large enough to distort the percentiles. */
export function clientLagLines(r: RunResult): string[] {
  const lag = r.clientLag;
  if (!lag) return [];
  const parts: string[] = [];
  const s = lag.scheduleLagUs;
  if (s) parts.push(`sent late by p50 ${fixed(s.p50, 1)} · p99 ${fixed(s.p99, 1)} · max ${fixed(s.max, 1)} us (actual - intended send)`);
  const d = lag.eventLoopDelayUs;
  if (d) parts.push(`event loop delay p50 ${fixed(d.p50, 1)} · p99 ${fixed(d.p99, 1)} · max ${fixed(d.max, 1)} us`);
  if (parts.length === 0) return [];
  const lines = [`client lag: ${parts.join('; ')}`];
  if (lag.distortsLatency) {
    const why =
      s && s.p99 >= (d?.p99 ?? 0)
        ? 'requests went out late: the client was busy or paused, or the window was full (a slow server or a small --pipeline)'
        : "the JS engine's event loop ran late (garbage collection, its own work, or a busy machine)";
    lines.push(
      `note: the client's own lag (p99 ${fixed(lag.p99, 1)} us) is more than ${CLIENT_LAG_SHARE * 100}% of the latency p99 (${fixed(r.latencyUs.p99, 1)} us): the percentiles include the client's pauses, not only the server's; ${why}`,
    );
  }
  return lines;
}

/**
 * The RunResult as --json shows it: a run that never started (nothing was
 * measured) has null figures, not zeros that read like a measurement.
 */
export function jsonView(r: RunResult): unknown {
  if (!notStarted(r)) return r;
  return { ...r, elapsedNs: null, elapsedSec: null, opsPerSec: null, avgUsPerOp: null, latencyUs: null, perCommand: null, percentilesUs: null };
}

/** The RunResult for --json, histograms included (compact: result-json.ts), stable field names; indented with `pretty`. */
export function formatJson(r: RunResult, pretty = false): string {
  return resultJsonText(jsonView(r), pretty);
}
