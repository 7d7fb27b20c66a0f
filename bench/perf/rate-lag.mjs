/**
 * Open-loop lateness: each engine of the working tree's build at
 * `--rate 20000 -c 4` for 3 s against the same redis-server, alternating,
 * `rounds` times; prints the medians of the schedule lag (actual − intended
 * send) p50/p99/p99.9, the latency p99 counted from the intended send, the
 * client process's CPU per request (start-up included) and its involuntary context switches (a process that keeps a
 * core busy is the one the scheduler preempts: issue 20 item 14).
 */
import { median, measured, printTable } from './processes.mjs';

const RATE = 20_000;
const CONNECTIONS = 4;
const DURATION = '3s';

export async function rateLag(cli, port, engines, rounds) {
  const samples = Object.fromEntries(engines.map((e) => [e, []]));
  for (let round = 0; round < rounds; round++) {
    for (const e of round % 2 === 0 ? engines : [...engines].reverse()) {
      const args = [cli, '--engine', e, '--port', String(port), '--mode', 'set', '--rate', String(RATE), '-c', String(CONNECTIONS), '--duration', DURATION, '--json'];
      const r = await measured(process.execPath, args);
      if (r.code !== 0) throw new Error(`respbench --engine ${e} --rate ${RATE} failed (${r.code}): ${r.err}`);
      const result = JSON.parse(r.out);
      const lag = result.clientLag.scheduleLagUs;
      samples[e].push({ p50: lag.p50, p99: lag.p99, p999: lag.p999, latencyP99: result.latencyUs.p99, cpuUsPerRequest: (r.cpu * 1e6) / result.requests, involuntary: r.involuntarySwitches });
    }
  }
  const rows = engines.map((e) => {
    const m = (f) => median(samples[e].map(f));
    return [e, m((s) => s.p50).toFixed(0), m((s) => s.p99).toFixed(0), m((s) => s.p999).toFixed(0), m((s) => s.latencyP99).toFixed(0), m((s) => s.cpuUsPerRequest).toFixed(1), String(Math.round(m((s) => s.involuntary)))];
  });
  console.log(`--rate ${RATE} -c ${CONNECTIONS} for ${DURATION}, ${rounds} rounds (medians; timing figures: compare engines of one run only):`);
  printTable(['engine', 'lag p50 us', 'lag p99 us', 'lag p99.9 us', 'latency p99 us', 'CPU us per request (process)', 'involuntary switches'], rows);
}
