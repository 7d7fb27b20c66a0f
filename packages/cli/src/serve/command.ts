/** `respbench serve`: the demo server in the foreground until a signal (or, when spawned, its stdin) ends it. */
import { Command, Option } from 'commander';
import type { CliIo } from '../io.js';
import { LIMITS } from '../engine-js/limits.js';
import { printableTarget, shownQuoted } from '../printable.js';
import { parseInteger } from '../flag-values.js';
import { UsageError } from '../usage-error.js';
import { startServer } from './server.js';

interface ServeFlags {
  host: string;
  port: string;
  exitWithStdin?: boolean;
  serviceTime?: string;
}

/** `--service-time`: `200us`, `1.5ms`, `0.01s` (the unit is required); in ns, up to 10 s. */
export function parseServiceTime(raw: string): number {
  const m = /^(\d+(?:\.\d+)?)(ns|us|µs|ms|s)$/.exec(String(raw).trim());
  const factor = { ns: 1, us: 1e3, µs: 1e3, ms: 1e6, s: 1e9 }[(m?.[2] ?? 'ns') as 'ns'];
  const ns = m ? Math.round(Number(m[1]) * factor) : NaN;
  if (!Number.isFinite(ns) || ns < 1 || ns > 10e9) {
    throw new UsageError(`--service-time must be a duration like 200us, 1.5ms or 0.01s, more than 0 and up to 10s (got ${shownQuoted(String(raw))})`);
  }
  return ns;
}

export function registerServeCommand(program: Command, io: CliIo): void {
  program
    .command('serve')
    .description('a kvstore-shaped RESP server for demos and tests (SET/GET, RSET/RGET, HSET/HGET as key value; in memory)')
    .option('--host <ip>', 'listen address', '127.0.0.1')
    .option('-p, --port <port>', 'port (0 picks a free one)', '8888')
    .option('--service-time <d>', 'every command takes d (e.g. 200us), one at a time for the whole server: a server of known capacity, 1/d ops/s, whatever the connections and pipeline')
    .addOption(new Option('--exit-with-stdin').hideHelp())
    .action(async (opts: ServeFlags) => {
      const serviceTimeNs = opts.serviceTime === undefined ? 0 : parseServiceTime(opts.serviceTime);
      // Unlike a run's --port, 0 is allowed: it picks a free port.
      const server = await startServer(parseInteger('--port', opts.port, [0, LIMITS.port[1]]), opts.host, { serviceTimeNs });
      // The first line's shape is what spawn.ts (and tests) read the port from.
      io.stdout(`respbench serve (demo/test target) listening on ${printableTarget(opts.host, server.port)}\n`);
      if (serviceTimeNs > 0) io.stdout(`service time ${serviceTimeNs / 1000} us per command, one at a time: capacity ${Math.round(1e9 / serviceTimeNs)} ops/s\n`);
      const stop = () => void server.close().then(() => process.exit(0));
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      if (opts.exitWithStdin) {
        process.stdin.on('end', stop);
        process.stdin.on('error', stop);
        process.stdin.resume();
      }
      await new Promise(() => undefined);
    });
}
