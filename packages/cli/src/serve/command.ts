/** `respbench serve`: the demo server in the foreground until a signal (or, when spawned, its stdin) ends it. */
import { Command, Option } from 'commander';
import type { CliIo } from '../io.js';
import { LIMITS } from '../engine-js/limits.js';
import { printableTarget } from '../printable.js';
import { parseDurationNs, parseInteger } from '../flag-values.js';

interface ServeFlags {
  host: string;
  port: string;
  exitWithStdin?: boolean;
  serviceTime?: string;
}

/** `--service-time`: `200us`, `1.5ms`, `0.01s` (flag-values.ts's duration grammar); in ns, up to 10 s. */
export function parseServiceTime(raw: string): number {
  return parseDurationNs('--service-time', raw, { allowZero: false, maxNs: 10e9 });
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
      // The server's modules load here, not with the program: a run parses none of them.
      const { startServer } = await import('./server.js');
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
