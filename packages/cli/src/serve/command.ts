/** `respbench serve`: the demo server in the foreground until a signal (or, when spawned, its stdin) ends it. */
import { Command, Option } from 'commander';
import type { CliIo } from '../io.js';
import { LIMITS } from '../engine-js/limits.js';
import { printableTarget } from '../printable.js';
import { parseInteger } from '../validate.js';
import { startServer } from './server.js';

interface ServeFlags {
  host: string;
  port: string;
  exitWithStdin?: boolean;
}

export function registerServeCommand(program: Command, io: CliIo): void {
  program
    .command('serve')
    .description('a kvstore-shaped RESP server for demos and tests (SET/GET, RSET/RGET, HSET/HGET as key value; in memory)')
    .option('--host <ip>', 'listen address', '127.0.0.1')
    .option('-p, --port <port>', 'port (0 picks a free one)', '8888')
    .addOption(new Option('--exit-with-stdin').hideHelp())
    .action(async (opts: ServeFlags) => {
      // Unlike a run's --port, 0 is allowed: it picks a free port.
      const server = await startServer(parseInteger('--port', opts.port, [0, LIMITS.port[1]]), opts.host);
      io.stdout(`respbench serve (demo/test target) listening on ${printableTarget(opts.host, server.port)}\n`);
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
