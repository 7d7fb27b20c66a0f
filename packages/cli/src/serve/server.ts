/**
 * `respbench serve`: a small kvstore-shaped RESP server, a DEMO AND TEST
 * TARGET only (in memory, no persistence, one thread), so that the tool can
 * be tried and tested on a machine with no server of its own. This file is
 * the TCP side; the commands are in store.ts, the parsing in protocol.ts,
 * starting it in a child process (`--embedded`, study targets) in spawn.ts.
 */
import net from 'node:net';
import { parseCommands } from './protocol.js';
import { error, execute, KvStore } from './store.js';

export interface RunningServer {
  port: number;
  close(): Promise<void>;
}

/** Serves on host:port (0 = any free port) in this process. */
export function startServer(port: number, host = '127.0.0.1'): Promise<RunningServer> {
  const store = new KvStore();
  const clients = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    clients.add(socket);
    socket.once('close', () => clients.delete(socket));
    socket.setNoDelay(true);
    let carry: Buffer = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      const buf = carry.length > 0 ? Buffer.concat([carry, chunk]) : chunk;
      const out: Buffer[] = [];
      let used: number;
      try {
        used = parseCommands(buf, buf.length, (args) => execute(store, args, out));
      } catch (err) {
        out.push(error(`Protocol error: ${(err as Error).message}`));
        socket.end(Buffer.concat(out));
        return;
      }
      carry = used < buf.length ? Buffer.from(buf.subarray(used)) : Buffer.alloc(0);
      if (out.length > 0) socket.write(out.length === 1 ? out[0] : Buffer.concat(out));
    });
    socket.on('error', () => socket.destroy());
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      const address = server.address() as net.AddressInfo;
      resolve({
        port: address.port,
        // Connected clients must not keep a stopping server alive.
        close: () =>
          new Promise<void>((res) => {
            server.close(() => res());
            for (const c of clients) c.destroy();
          }),
      });
    });
  });
}

