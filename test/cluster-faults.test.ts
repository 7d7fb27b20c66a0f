/**
 * --cluster against replies a healthy cluster sends rarely or never: a
 * topology reply that is no slot map, redirections that never end, a
 * redirection that does not parse. The target is
 * test/faults/cluster-fault-server.mjs (a RESP server on a real loopback
 * socket, a test target only); every case runs over each engine that loads.
 */
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { slotsReply, startClusterFaultServer, type ClusterFaultServer } from './faults/cluster-fault-server.mjs';
import { STACK_TRACE } from './faults/harness.js';
import { expectRowsAddUp } from './helpers/cluster.js';
import { engines } from './helpers/engines.js';
import { runCli, runJson } from './helpers/servers.js';

const vectors = JSON.parse(readFileSync(new URL('./vectors/topology.json', import.meta.url), 'utf8')) as {
  invalid: { command: string; case: string; reply: string; error: string }[];
};
const slotsCase = (name: string) => vectors.invalid.find((v) => v.command === 'slots' && v.case === name)!;

const servers: ClusterFaultServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function serve(options: Parameters<typeof startClusterFaultServer>[0]): Promise<ClusterFaultServer> {
  const s = await startClusterFaultServer(options);
  servers.push(s);
  return s;
}

/** A run's flags: 200 requests, unless `more` bounds it by time (-n and --duration do not go together). */
const run = (engine: string, port: number, more: string[] = []) => [
  ...['--engine', engine, '--cluster', '-p', String(port), '--mode', 'set', '-c', '1', '-P', '4', '--seed', '3', '--timeout', '5s'],
  ...(more.includes('--duration') ? [] : ['-n', '200']),
  ...more,
];

describe.each(engines())('engine %s: --cluster against a faulty cluster', (engine) => {
  it.each(['a slot past 16383', 'a range whose start is past its end', 'overlapping ranges', 'a primary with no host and port', 'a port past 65535'])(
    'discovery refuses a CLUSTER SLOTS reply with %s in one line naming the node and the range, exit 1',
    async (name) => {
      const v = slotsCase(name);
      const s = await serve({ slots: () => v.reply });
      const r = await runCli(run(engine, s.port), 20_000);
      expect(r.code).toBe(1);
      const lines = r.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toBe(`respbench: --cluster: no seed node told the topology (127.0.0.1:${s.port}: ${v.error})`);
      expect(r.stderr + r.stdout).not.toMatch(/\bPlan\b|STACK|panicked/);
      expect(r.stderr).not.toMatch(STACK_TRACE);
      expect(s.commands()).toBe(0);
    },
  );

  /** A's and B's: every slot at A (what discovery reads); each answers data commands as `answer` says, given the other's port. */
  async function pair(answer: (self: 'a' | 'b', other: number) => string) {
    let aPort = 0;
    let bPort = 0;
    const a = await serve({ slots: () => slotsReply([[0, 16383, aPort]]), reply: () => answer('a', bPort) });
    aPort = a.port;
    const b = await serve({ slots: () => slotsReply([[0, 16383, aPort]]), reply: () => answer('b', aPort) });
    bPort = b.port;
    return { a, b };
  }

  it(`a MOVED ping-pong between two nodes: each request followed ${5} times in a row, then one error reply naming the loop; exit 3, no --timeout`, async () => {
    const { a } = await pair((_self, other) => `-MOVED 1234 127.0.0.1:${other}\r\n`);
    const started = Date.now();
    const { run: r, result } = await runJson(run(engine, a.port, ['-n', '20']), 30_000);
    expect(Date.now() - started).toBeLessThan(4_000);
    expect(r.code).toBe(3);
    expect(result.failure).toBeNull();
    expect(result.errors).toBe(20);
    expect(result.redirections).toEqual({ moved: 20 * 6, ask: 0, tryagain: 0 });
    expect(result.firstError).toMatch(/^redirected 6 times in a row, the last: 127\.0\.0\.1:\d+ answered MOVED 1234 127\.0\.0\.1:\d+ \(a redirection loop: --cluster follows at most 5 MOVED\/ASK in a row\)$/);
    // Each redirection counts in the row of the node that sent it; the rows add up to the totals.
    expectRowsAddUp(result);
    // A request given up is an answered error reply: its latency is recorded as one's is (it was an empty
    // histogram read as 0 µs everywhere), and the command rows agree with the run's figures.
    expect(result.latencyUs.max).toBeGreaterThan(0);
    expect(result.perCommand.at(-1)).toMatchObject({ requests: 20, opsPerSec: result.opsPerSec });
    expect(result.perNode.reduce((n: number, row: { requests: number }) => n + row.requests, 0)).toBe(20);
    for (const row of result.perNode.filter((row: { requests: number }) => row.requests > 0)) expect(row.p99Us).toBeGreaterThan(0);
  });

  it('an ASK storm (each node ASKs the other) ends the same way', async () => {
    const { a } = await pair((_self, other) => `-ASK 1234 127.0.0.1:${other}\r\n`);
    const { run: r, result } = await runJson(run(engine, a.port, ['-n', '8']), 30_000);
    expect(r.code).toBe(3);
    expect(result.failure).toBeNull();
    expect([result.errors, result.redirections.ask]).toEqual([8, 8 * 6]);
    expect(result.firstError).toMatch(/^redirected 6 times in a row, the last: .* answered ASK 1234 /);
    expectRowsAddUp(result);
  });

  it('a MOVED to a node that refuses connections: asked again after a backoff, then the error naming the refusal; exit 3, not a --timeout naming the dead node', async () => {
    // Port 1: nothing listens there (a freed port could become another file's server).
    const a = await serve({ slots: (port) => slotsReply([[0, 16383, port]]), reply: () => '-MOVED 1 127.0.0.1:1\r\n' });
    const { run: r, result } = await runJson(run(engine, a.port, ['-n', '4', '--timeout', '2s']), 30_000);
    expect(r.code, r.stderr).toBe(3);
    expect(result.failure).toBeNull();
    expect(result.errors).toBe(4);
    // Each request went back to the node that answered, which redirected it again: more than one MOVED each.
    expect(result.redirections.moved).toBeGreaterThan(4 * 2);
    expect(result.firstError).toMatch(/^redirected to 127\.0\.0\.1:1: connection refused by 127\.0\.0\.1:1 .*\(still, after \d+ retries in \d+ ms: --cluster sends a request again for at most 1500 ms, 3\/4 of --timeout, from its first send\)$/);
    expectRowsAddUp(result);
  });

  it.each(['TRYAGAIN Multiple keys request during rehashing of slot', 'CLUSTERDOWN The cluster is down'])(
    'a slot answered %s forever: retried with backoff for 3/4 of --timeout, then the error reply it got; exit 3, not a --timeout',
    async (text) => {
      const a = await serve({ slots: (port) => slotsReply([[0, 16383, port]]), reply: () => `-${text}\r\n` });
      const started = Date.now();
      const { run: r, result } = await runJson(run(engine, a.port, ['-n', '4', '--timeout', '2s']), 30_000);
      expect(Date.now() - started).toBeLessThan(6_000);
      expect(r.code).toBe(3);
      expect(result.failure).toBeNull();
      expect(result.errors).toBe(4);
      // 10, 20, 40 … 500 ms apart within 1.5 s: 7 or 8 retries each.
      expect(result.redirections.tryagain).toBeGreaterThanOrEqual(4 * 6);
      expect(result.redirections.tryagain).toBeLessThanOrEqual(4 * 9);
      expect(result.firstError).toMatch(new RegExp(`^${text} \\(still, after \\d+ retries in \\d+ ms: --cluster sends a request again for at most 1500 ms, 3/4 of --timeout, from its first send\\)$`));
      expectRowsAddUp(result);
      expect(r.stdout + r.stderr).not.toContain('(--timeout)');
    },
  );

  it.each(['CLUSTERDOWN The cluster is down', 'MOVED ping-pong'])(
    'a cluster that answers nothing (%s, every request): a stall, not a run that crawls a window per 3/4 of --timeout; exit 1 after --timeout with the given-up counted',
    async (what) => {
      const { a } = await pair((_self, other) => (what === 'MOVED ping-pong' ? `-MOVED 1234 127.0.0.1:${other}\r\n` : `-${what}\r\n`));
      const started = Date.now();
      // 2,000 requests: at one window per 1.5 s (or per MOVED loop) this would take many minutes.
      const { run: r, result } = await runJson(run(engine, a.port, ['-n', '2000', '--timeout', '2s']), 30_000);
      const took = Date.now() - started;
      expect(r.code, r.stderr).toBe(1);
      expect(took).toBeGreaterThanOrEqual(2_000);
      expect(took).toBeLessThan(8_000);
      expect(result.failure.kind).toBe('timeout');
      expect(result.failure.message).toMatch(/^connection 0 \(127\.0\.0\.1:\d+\): no answer within 2000 ms \(--timeout\) after 0 answered and \d+ given up: every reply since was a redirection, sent again \(so far MOVED \d+, ASK 0, TRYAGAIN\/CLUSTERDOWN \d+\): no node served these requests$/);
      const givenUp = Number(/and (\d+) given up/.exec(result.failure.message)![1]);
      // What was given up before the stall counts as the errors it got, and nothing else was answered.
      expect(result.errors).toBe(givenUp);
      expect(result.requests).toBe(givenUp);
      expect(result.requests).toBeLessThan(2000);
      expect(r.stderr).toContain('no answer within 2000 ms (--timeout)');
      expect(r.stderr).not.toMatch(STACK_TRACE);
    },
  );

  it.each(['MOVED abc', 'MOVED 1234', 'ASK 99999 127.0.0.1:7001', 'MOVED 1 127.0.0.1:port'])('a malformed redirection (%s) is one error reply per request, not a redirection', async (text) => {
    const a = await serve({ slots: (port) => slotsReply([[0, 16383, port]]), reply: () => `-${text}\r\n` });
    const { run: r, result } = await runJson(run(engine, a.port, ['-n', '20']), 30_000);
    expect(r.code).toBe(3);
    expect(result.failure).toBeNull();
    expect([result.errors, result.requests]).toEqual([20, 20]);
    expect(result.redirections).toEqual({ moved: 0, ask: 0, tryagain: 0 });
    expect(result.firstError).toBe(text);
    expect(a.commands()).toBe(20);
    expectRowsAddUp(result);
  });

  it('a topology refresh answered with a reply that is no slot map keeps the map from before and says so once', async () => {
    const bad = slotsCase('a slot past 16383');
    let aPort = 0;
    // Each run's discovery (its first question) gets a good map, every refresh the bad reply.
    let discovery = true;
    const slots = () => {
      const good = discovery;
      discovery = false;
      return good ? slotsReply([[0, 16383, aPort]]) : bad.reply;
    };
    const b = await serve({ slots, reply: () => '+OK\r\n' });
    const a = await serve({ slots, reply: () => `-MOVED 1234 127.0.0.1:${b.port}\r\n` });
    aPort = a.port;
    // Long enough for the refresh's answer to come back during the run.
    const load = run(engine, a.port, ['--duration', '1s', '--rate', '2000']);
    const { run: r, result } = await runJson(load, 30_000);
    expect(r.code, r.stderr).toBe(0);
    expect(result.failure).toBeNull();
    expect(result.ok).toBeGreaterThan(1000);
    expect(result.redirections.moved).toBeGreaterThan(0);
    expect(b.asked()).toBeGreaterThan(0);
    expect(result.topologyRejected).toBe(`127.0.0.1:${b.port}: ${bad.error}`);
    discovery = true;
    const human = await runCli(load, 30_000);
    expect(human.code, human.stderr).toBe(0);
    const notes = human.stdout.split('\n').filter((l) => l.includes('topology refresh'));
    expect(notes).toEqual([`note: a topology refresh was refused, the slot map from before kept: 127.0.0.1:${b.port}: ${bad.error}`]);
  });
});

