/**
 * Large replies: each list is built once (RPUSH through respbench itself),
 * then read with LRANGE key 0 -1 by each engine of the working tree's build,
 * alternating, `rounds` times; prints the median time per reply and the
 * JS ÷ native ratio.
 */
import { median, measured, printTable } from './processes.mjs';

export async function largeReplies(cli, port, engines, rounds) {
  const lists = [
    { name: 'LRANGE 2,000,000 elements (8 B each)', prefix: 'perf:large:2m:', elements: 2_000_000, size: 8 },
    { name: '16 MiB flat array (1 B elements)', prefix: 'perf:large:16m:', elements: Math.floor((16 << 20) / 7), size: 1 },
  ];
  const builder = engines.includes('native') ? 'native' : engines[0];
  const rows = [];
  for (const list of lists) {
    const fill = await measured(process.execPath, [cli, '--engine', builder, '--port', String(port), '--mode', 'set', '--set-cmd', 'RPUSH __key__ __data__', '--keyspace', '1', '--key-prefix', list.prefix, '--requests', String(list.elements), '--pipeline', '1000', '--value-size', String(list.size), '--seed', '1', '-q']);
    if (fill.code !== 0) throw new Error(`building ${list.name} failed: ${fill.err}`);
    const samples = Object.fromEntries(engines.map((e) => [e, []]));
    let replyBytes = 0;
    for (let round = 0; round < rounds; round++) {
      for (const e of round % 2 === 0 ? engines : [...engines].reverse()) {
        const args = [cli, '--engine', e, '--port', String(port), '--mode', 'get', '--get-cmd', 'LRANGE __key__ 0 -1', '--keyspace', '1', '--key-prefix', list.prefix, '--requests', '1', '--pipeline', '1', '--no-preload', '--timeout', '5m', '--json'];
        const r = await measured(process.execPath, args);
        if (r.code !== 0) throw new Error(`respbench --engine ${e} on ${list.name} failed (${r.code}): ${r.err}`);
        const result = JSON.parse(r.out);
        replyBytes = result.bytesIn;
        samples[e].push({ sec: result.elapsedSec, maxrssKb: r.maxrssKb });
      }
    }
    const native = samples.native ? median(samples.native.map((s) => s.sec)) : null;
    for (const e of engines) {
      const sec = median(samples[e].map((s) => s.sec));
      rows.push([list.name, e, `${(replyBytes / 2 ** 20).toFixed(1)} MiB`, sec.toFixed(3), native ? (sec / native).toFixed(2) : '-', String(Math.round(median(samples[e].map((s) => s.maxrssKb)) / 1024))]);
    }
  }
  console.log(`large replies (one request each, ${rounds} rounds, medians):`);
  printTable(['reply', 'engine', 'reply size', 's per reply', 'vs native', 'peak RSS MiB'], rows);
}
