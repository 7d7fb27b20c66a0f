/**
 * The JS engine's rooms without a server: a Client's window over its Link
 * (what goes out, and when), the Router's redirections (MOVED, ASK,
 * TRYAGAIN re-sent on the client's Link to the node named, never a socket
 * of another kind) and the Pacer's schedule. The sockets are in-memory
 * streams: what the engine writes is read back, the replies are pushed by
 * the test.
 */
import { Duplex } from 'node:stream';
import type net from 'node:net';
import { describe, expect, it } from 'vitest';
import { ThreadAlarm } from '../src/engine-js/alarm.js';
import { Client } from '../src/engine-js/client.js';
import { newCounters } from '../src/engine-js/counters.js';
import { LatencyHistogram } from '../src/engine-js/histogram.js';
import { Pacer, rampSteps, Schedule, type Wakeable } from '../src/engine-js/pacer.js';
import type { Failure, Plan } from '../src/engine-js/plan.js';
import { PreparedPlan, SEND_ALL } from '../src/engine-js/request-source.js';
import { MAX_REDIRECTIONS } from '../src/engine-js/router.js';
import { keySlot } from '../src/engine-js/slot.js';
import { Tally } from '../src/engine-js/tally.js';
import { TopologyRefresh } from '../src/engine-js/topology-refresh.js';
import { planOf } from './fixtures.js';

/** An in-memory socket: every write is kept; `reply` feeds the engine bytes as the server would. */
class FakeSocket extends Duplex {
  readonly writes: Buffer[] = [];
  readyState = 'open';

  override _write(chunk: Buffer, _enc: BufferEncoding, done: () => void): void {
    this.writes.push(Buffer.from(chunk));
    done();
  }

  override _read(): void {}

  reply(text: string): void {
    this.emit('data', Buffer.from(text, 'latin1'));
  }

  /** Everything written so far, as text. */
  text(): string {
    return Buffer.concat(this.writes).toString('latin1');
  }
}

/** How many requests of command `name` (upper case) the text holds. */
function count(text: string, name: string): number {
  return text.split(`\r\n${name}\r\n`).length - 1;
}

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits (up to 2 s) for `check` to hold: a backoff's timer sends what the test waits for. */
async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await wait(10);
  expect(check()).toBe(true);
}

/** A client over fake sockets, one per target; resolves `done` with its failure (null: its share answered). */
function clientOf(plan: Plan, targets: { node: number; target: Plan }[], refresh: TopologyRefresh | null = null) {
  const prepared = new PreparedPlan(plan);
  const counters = newCounters();
  const sockets = targets.map(() => new FakeSocket());
  let finished: (f: Failure | null) => void = () => {};
  const done = new Promise<Failure | null>((r) => (finished = r));
  const client = new Client({
    id: 0,
    pacerIndex: 0,
    feeds: targets.map(({ node, target }, k) => ({
      socket: sockets[k] as unknown as net.Socket,
      source: prepared.runSource(0, false, node, SEND_ALL),
      target,
      node,
      replica: false,
    })),
    prepared,
    counters,
    tally: new Tally(prepared, counters, null, null),
    schedule: null,
    pacer: null,
    deadline: Infinity,
    nodes: null,
    refresh,
    finish: (_id, f) => finished(f),
  });
  return { client, sockets, counters, done };
}

describe("a Link's window", () => {
  it('sends -P requests at once, one more per reply, and ends when every request is answered', async () => {
    const plan = planOf(['-n', '10', '-P', '4', '-c', '1', '--mode', 'set']);
    const { client, sockets, counters, done } = clientOf(plan, [{ node: -1, target: plan }]);
    const s = sockets[0];
    client.start();
    expect(count(s.text(), 'SET')).toBe(4);
    s.reply('+OK\r\n+OK\r\n');
    expect(count(s.text(), 'SET')).toBe(6);
    // Half a reply frees nothing.
    s.reply('+O');
    expect(count(s.text(), 'SET')).toBe(6);
    s.reply('K\r\n');
    expect(count(s.text(), 'SET')).toBe(7);
    s.reply('+OK\r\n'.repeat(4));
    expect(count(s.text(), 'SET')).toBe(10);
    s.reply('+OK\r\n'.repeat(3));
    expect(await done).toBeNull();
    expect(counters.sets).toBe(10);
    expect(counters.ok).toBe(10);
    expect(counters.bytesOut).toBe(s.text().length);
  });

  it('a reply no request asked for ends the run as a protocol error', async () => {
    const plan = planOf(['-n', '2', '-P', '1', '-c', '1', '--mode', 'set']);
    const { client, sockets, done } = clientOf(plan, [{ node: -1, target: plan }]);
    client.start();
    sockets[0].reply('+OK\r\n+OK\r\n+OK\r\n');
    const failure = await done;
    expect(failure?.kind).toBe('protocol');
    expect(failure?.message).toContain('a reply no request asked for');
  });
});

describe("the Router's redirections", () => {
  /** Two primaries: every slot at node 0, so node 1's Link carries only what a redirection sends it. */
  function clusterPlan(): Plan {
    const base = planOf(['-n', '3', '-P', '1', '-c', '1', '--mode', 'set', '-r', '1', '--key-prefix', '{r}:']);
    const nodes = [
      { host: '127.0.0.1', port: 7001 },
      { host: '127.0.0.1', port: 7002 },
    ];
    return { ...base, cluster: { seeds: ['127.0.0.1:7001'], nodes, slots: [[0, 16383, 0]] } };
  }
  const slot = keySlot(Buffer.from('r'), 0, 1);

  function start(refresh: TopologyRefresh | null = null) {
    const plan = clusterPlan();
    const targets = plan.cluster!.nodes.map((n, node) => ({ node, target: { ...plan, host: n.host, port: n.port } }));
    const c = clientOf(plan, targets, refresh);
    c.client.start();
    return c;
  }

  it('a MOVED one client gets is news for the other clients of the phase: their requests of that slot go straight to the new owner', async () => {
    const refresh = new TopologyRefresh(clusterPlan());
    const first = start(refresh);
    const second = start(refresh);
    // Asked of nothing here: the refresh's query is not this test's.
    refresh.close();
    first.sockets[0].reply(`-MOVED ${slot} 127.0.0.1:7002\r\n`);
    expect(first.counters.moved).toBe(1);
    second.sockets[0].reply('+OK\r\n');
    // The second client's next request went to node 1 without a MOVED of its own.
    expect(count(second.sockets[0].text(), 'SET')).toBe(1);
    expect(count(second.sockets[1].text(), 'SET')).toBe(1);
    expect(second.counters.moved).toBe(0);
    for (const c of [first, second]) {
      c.sockets[1].reply('+OK\r\n');
      c.sockets[1].reply('+OK\r\n');
    }
    first.sockets[1].reply('+OK\r\n');
    expect(await first.done).toBeNull();
    expect(await second.done).toBeNull();
  });

  it('a refreshed map sends a slot\'s next requests straight to its new owner, with no MOVED, and each request once', async () => {
    const refresh = new TopologyRefresh(clusterPlan());
    const { sockets, counters, done } = start(refresh);
    const [a, b] = sockets;
    expect(count(a.text(), 'SET')).toBe(1);
    // Every slot at node 1 now (as CLUSTER SHARDS would say after a reshard).
    refresh.apply({ labels: ['127.0.0.1:7001', '127.0.0.1:7002'], owner: new Uint16Array(16384).fill(1) });
    a.reply('+OK\r\n');
    expect(count(a.text(), 'SET')).toBe(1);
    expect(count(b.text(), 'SET')).toBe(1);
    b.reply('+OK\r\n');
    expect(count(b.text(), 'SET')).toBe(2);
    b.reply('+OK\r\n');
    expect(await done).toBeNull();
    expect(counters.ok).toBe(3);
    expect(counters.moved).toBe(0);
    expect(count(a.text(), 'SET') + count(b.text(), 'SET')).toBe(3);
    expect(refresh.applied).toBe(1);
    refresh.close();
  });

  it('MOVED re-sends the request on the Link to the node named, and the slot\'s later requests go straight there', async () => {
    const { sockets, counters, done } = start();
    const [a, b] = sockets;
    expect(count(a.text(), 'SET')).toBe(1);
    expect(b.text()).toBe('');
    const first = a.text();
    a.reply(`-MOVED ${slot} 127.0.0.1:7002\r\n`);
    // The same request, on the other node's Link.
    expect(b.text()).toBe(first);
    expect(counters.moved).toBe(1);
    b.reply('+OK\r\n');
    // The window's charge came back to node 0's source: its next request went straight to node 1.
    expect(count(a.text(), 'SET')).toBe(1);
    expect(count(b.text(), 'SET')).toBe(2);
    b.reply('+OK\r\n');
    expect(count(b.text(), 'SET')).toBe(3);
    b.reply('+OK\r\n');
    expect(await done).toBeNull();
    expect(counters.ok).toBe(3);
    expect(counters.errors).toBe(0);
  });

  it('ASK sends ASKING first on the node named, counts one reply, and leaves the slot where it was', async () => {
    const { sockets, counters, done } = start();
    const [a, b] = sockets;
    a.reply(`-ASK ${slot} 127.0.0.1:7002\r\n`);
    expect(b.text().startsWith('*1\r\n$6\r\nASKING\r\n*3\r\n$3\r\nSET\r\n')).toBe(true);
    // ASKING's +OK, then the request's.
    b.reply('+OK\r\n+OK\r\n');
    expect(counters.asked).toBe(1);
    expect(counters.ok).toBe(1);
    // The next request goes to node 0 again.
    expect(count(a.text(), 'SET')).toBe(2);
    a.reply('+OK\r\n');
    a.reply('+OK\r\n');
    expect(await done).toBeNull();
    expect(counters.ok).toBe(3);
  });

  it('TRYAGAIN sends the request again on the same Link after a backoff', async () => {
    const { sockets, counters, done } = start();
    const [a, b] = sockets;
    a.reply('-TRYAGAIN Multiple keys request during rehashing of slot\r\n');
    expect(counters.retried).toBe(1);
    // Not at once: after the first backoff (10 ms).
    expect(count(a.text(), 'SET')).toBe(1);
    await wait(40);
    expect(count(a.text(), 'SET')).toBe(2);
    expect(b.text()).toBe('');
    a.reply('+OK\r\n');
    a.reply('+OK\r\n');
    a.reply('+OK\r\n');
    expect(await done).toBeNull();
    expect(counters.ok).toBe(3);
    expect(counters.errors).toBe(0);
  });
});

describe("the Router's limits (the native engine's router/cluster.rs has the same)", () => {
  function clusterPlan(): Plan {
    const base = planOf(['-n', '1', '-P', '1', '-c', '1', '--mode', 'set', '-r', '1', '--key-prefix', '{r}:', '--timeout', '5s']);
    const nodes = [
      { host: '127.0.0.1', port: 7001 },
      { host: '127.0.0.1', port: 7002 },
    ];
    return { ...base, cluster: { seeds: ['127.0.0.1:7001'], nodes, slots: [[0, 16383, 0]] } };
  }
  const slot = keySlot(Buffer.from('r'), 0, 1);
  function start() {
    const plan = clusterPlan();
    const targets = plan.cluster!.nodes.map((n, node) => ({ node, target: { ...plan, host: n.host, port: n.port } }));
    const c = clientOf(plan, targets, null);
    c.client.start();
    return c;
  }

  it(`a MOVED ping-pong is followed ${MAX_REDIRECTIONS} times, then counts as one error reply naming the loop`, async () => {
    const { sockets, counters, done } = start();
    const [a, b] = sockets;
    for (let hop = 1; hop <= MAX_REDIRECTIONS + 1; hop++) {
      const [from, port] = hop % 2 === 1 ? [a, 7002] : [b, 7001];
      await until(() => count(from.text(), 'SET') === Math.ceil(hop / 2));
      from.reply(`-MOVED ${slot} 127.0.0.1:${port}\r\n`);
    }
    expect(await done).toBeNull();
    expect(counters.moved).toBe(MAX_REDIRECTIONS + 1);
    expect(counters.errors).toBe(1);
    expect(counters.firstError).toBe(
      `redirected ${MAX_REDIRECTIONS + 1} times in a row, the last: 127.0.0.1:7002 answered MOVED ${slot} 127.0.0.1:7001 (a redirection loop: --cluster follows at most ${MAX_REDIRECTIONS} MOVED/ASK in a row)`,
    );
    // Sent once, then once per redirection followed.
    expect(count(a.text(), 'SET') + count(b.text(), 'SET')).toBe(MAX_REDIRECTIONS + 1);
  });

  it.each(['MOVED abc', `MOVED ${slot}`, `MOVED 16384 127.0.0.1:7002`, `ASK ${slot} 127.0.0.1:port`, `MOVED ${slot} 127.0.0.1:0`])(
    'a malformed redirection (%s) is one error reply, not a redirection',
    async (text) => {
      const { sockets, counters, done } = start();
      sockets[0].reply(`-${text}\r\n`);
      expect(await done).toBeNull();
      expect([counters.errors, counters.moved, counters.asked]).toEqual([1, 0, 0]);
      expect(counters.firstError).toBe(text);
      expect(sockets[1].text()).toBe('');
    },
  );

  it('TRYAGAIN goes again to the node that answered it, the one an ASK sent it to included', async () => {
    const { sockets, counters, done } = start();
    const [a, b] = sockets;
    a.reply(`-ASK ${slot} 127.0.0.1:7002\r\n`);
    b.reply('+OK\r\n-TRYAGAIN Multiple keys request during rehashing of slot\r\n');
    await until(() => count(b.text(), 'SET') === 2);
    expect(count(a.text(), 'SET')).toBe(1);
    b.reply('+OK\r\n');
    expect(await done).toBeNull();
    expect([counters.asked, counters.retried, counters.ok, counters.errors]).toEqual([1, 1, 1, 0]);
  });
});

describe("the Pacer's schedule", () => {
  it('request k of a client is due at its offset plus k intervals; its lateness is recorded', () => {
    const lag = new LatencyHistogram();
    const s = new Schedule({ deadline: Infinity, intervalMs: 10, offsetMs: 2 }, lag);
    s.start(1000);
    expect(s.dueAt(0)).toBe(1002);
    expect(s.dueAt(3)).toBe(1032);
    // Due by a time: those whose due time has come.
    expect(s.dueBy(1001)).toBe(0);
    expect(s.dueBy(1002)).toBe(1);
    expect(s.dueBy(1031.9)).toBe(3);
    expect(s.intendedFor(1, 1015)).toBe(1012);
    expect(lag.total).toBe(1);
  });

  it('wakes each client once, at its due time, earliest first; a forgotten one not at all', async () => {
    const pacer = new Pacer(3, await ThreadAlarm.open());
    const woken: number[] = [];
    const client = (pacerIndex: number): Wakeable => ({ pacerIndex, onDue: () => woken.push(pacerIndex) });
    const [c0, c1, c2] = [client(0), client(1), client(2)];
    const now = performance.now();
    pacer.wake(c0, now + 30);
    pacer.wake(c1, now + 5);
    pacer.wake(c2, now + 15);
    // A later wake-up for a client already waiting keeps the earlier one.
    pacer.wake(c1, now + 50);
    pacer.forget(c2);
    await wait(80);
    expect(woken).toEqual([1, 0]);
    expect(pacer.waitingCount).toBe(0);
    pacer.close();
  });

  it('a ramp opens its later clients in steps', () => {
    const steps = rampSteps({ start: 2, step: 2, everyMs: 100 }, 2, 0, 7);
    expect(steps).toEqual([
      { atMs: 100, ids: [2, 3] },
      { atMs: 200, ids: [4, 5] },
      { atMs: 300, ids: [6] },
    ]);
  });
});
