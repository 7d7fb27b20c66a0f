/**
 * The node a redirected slot lives on dies mid-run (SIGKILL) under
 * --reconnect: the run goes on and ends whole, and every request is
 * accounted for: those counted lost (in flight when the node died) plus
 * those answered equal those sent. A Link to a node a redirection sent
 * requests to recovers like any other (issue 19): there is no second kind
 * of socket whose loss ends the run. A 3-primary cluster with a replica each,
 * its own (a node is killed), on loopback.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { keySlot } from '../packages/cli/src/engine-js/slot.js';
import { startCluster } from './helpers/cluster.js';
import { engines } from './helpers/engines.js';
import { runJson } from './helpers/servers.js';

function redis(port: number, ...args: string[]): string {
  return spawnSync('redis-cli', ['-p', String(port), ...args], { encoding: 'utf8' }).stdout.trim();
}

/** Calls of `command` a node has served (INFO commandstats). */
function commandCalls(port: number, command: string): number {
  const m = new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(redis(port, 'INFO', 'commandstats'));
  return m ? Number(m[1]) : 0;
}

/** Slot → primary port, from CLUSTER SLOTS. */
function ownerOf(port: number, slot: number): number {
  const rows = JSON.parse(redis(port, '--json', 'CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
  return rows.find(([first, last]) => first <= slot && slot <= last)![2][1];
}

async function until(what: string, ok: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// The native engine's Links join when its Recovery does the same (issue 19); until then it ends the run.
describe.each(engines().filter((e) => e === 'js'))('the node of a redirected slot killed mid-run (%s engine)', (engine) => {
  it('under --reconnect the run goes on, and lost + answered = sent', async () => {
    const own = await startCluster(3, 1);
    try {
      const [source, dest] = own.primaries();
      const tag = ['nd0', 'nd1', 'nd2', 'nd3', 'nd4', 'nd5', 'nd6', 'nd7'].find((t) => ownerOf(source, keySlot(Buffer.from(t), 0, t.length)) === source)!;
      const slot = keySlot(Buffer.from(tag), 0, tag.length);
      const destId = redis(dest, 'CLUSTER', 'MYID');
      const sourceId = redis(source, 'CLUSTER', 'MYID');
      const destNode = own.nodes.find((n) => n.port === dest)!;
      // Its replica in sync (a replica that never synced does not fail over).
      await until('the replica in sync', () =>
        own.nodes.some((n) => {
          const info = redis(n.port, 'INFO', 'replication');
          return info.includes('role:slave') && info.includes(`master_port:${dest}`) && info.includes('master_link_status:up');
        }),
      );
      const sent = 12_000;
      const before = commandCalls(source, 'get');
      // Paced, so the run lasts long enough for the slot to move, the node to die and its replica to take over.
      const running = runJson(['--cluster', '-p', String(source), '--engine', engine, '-n', String(sent), '--rate', '2000', '-c', '2', '-P', '4', '-r', '300', '--key-prefix', `{${tag}}:`, '--mode', 'get', '--no-preload', '--timeout', '10s', '--reconnect', '--reconnect-backoff', '100ms', '--reconnect-attempts', '1000'], 60_000);
      // Reads only (no key is written), so the slot can be given away at once: SETSLOT NODE refuses while the source holds keys of it.
      await until('load on the source', () => commandCalls(source, 'get') > before + 50);
      const destBefore = commandCalls(dest, 'get');
      // A resharding step as redis-cli does it: the destination's epoch goes up, so its replica inherits the slot when it takes over.
      redis(dest, 'CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', sourceId);
      redis(source, 'CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', destId);
      for (const p of [dest, source, ...own.primaries().filter((x) => x !== dest && x !== source)]) redis(p, 'CLUSTER', 'SETSLOT', String(slot), 'NODE', destId);
      await until('redirected GETs on the destination', () => commandCalls(dest, 'get') > destBefore + 50);
      destNode.process.kill('SIGKILL');
      const { run, result } = await running;
      expect(result.failure, `${run.stderr} ${JSON.stringify(result.failure)} slot ${slot} now at ${ownerOf(source, slot)}`).toBeNull();
      // 3: some requests were given up as errors while the slot had no primary (CLUSTERDOWN past --timeout).
      expect([0, 3]).toContain(run.code);
      expect(result.redirections.moved).toBeGreaterThan(0);
      expect(result.reconnects).toBeGreaterThanOrEqual(1);
      // Every request sent is answered or counted lost, none twice.
      expect(result.requests + result.lost).toBe(sent);
    } finally {
      await own.stop();
    }
  }, 90_000);
});
