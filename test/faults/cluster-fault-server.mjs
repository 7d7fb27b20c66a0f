/**
 * A CLUSTER-SHAPED FAULT SERVER, A TEST TARGET ONLY: a RESP server on a real
 * loopback socket that answers CLUSTER SHARDS as an unknown subcommand,
 * CLUSTER SLOTS with the reply the test gives (right or wrong), and every
 * other command as the test says (MOVED, ASK, TRYAGAIN, CLUSTERDOWN, a
 * malformed redirection, or +OK), so that what respbench --cluster does with
 * replies a real cluster sends only in rare moments (a slot moving back and
 * forth, a long failover) or never (a broken topology) can be pinned.
 *
 *   const s = await startClusterFaultServer({ slots: (port, asked) => RESP text, reply: (args) => RESP text })
 *
 * `slots(port, asked)`: the CLUSTER SLOTS reply, `asked` the questions so
 * far (0 for the first, discovery's); `reply(args, port)`: any data command's.
 * ASKING, CLIENT, READONLY, PING and SELECT are answered +OK.
 */
import net from 'node:net';
import { takeCommands } from './fault-server.mjs';

const OK = '+OK\r\n';
const CONTROL = new Set(['ASKING', 'CLIENT', 'READONLY', 'PING', 'SELECT']);

/** RESP2 text of a CLUSTER SLOTS reply: `[[first, last, port], …]` on 127.0.0.1. */
export function slotsReply(ranges) {
  const bulk = (s) => `$${Buffer.byteLength(s)}\r\n${s}\r\n`;
  return `*${ranges.length}\r\n${ranges.map(([first, last, port]) => `*3\r\n:${first}\r\n:${last}\r\n*3\r\n${bulk('127.0.0.1')}:${port}\r\n${bulk(`node${port}`)}`).join('')}`;
}

export function startClusterFaultServer({ slots, reply = () => OK }) {
  const sockets = new Set();
  let asked = 0;
  let commands = 0;
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.setNoDelay(true);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    let carry = Buffer.alloc(0);
    socket.on('data', (chunk) => {
      const buf = carry.length > 0 ? Buffer.concat([carry, chunk]) : chunk;
      let taken;
      try {
        taken = takeCommands(buf);
      } catch (err) {
        socket.end(`-ERR cluster-fault-server: ${err.message}\r\n`);
        return;
      }
      const [cmds, used] = taken;
      carry = Buffer.from(buf.subarray(used));
      let out = '';
      for (const args of cmds) {
        const name = args[0].toString('latin1').toUpperCase();
        const sub = args[1]?.toString('latin1').toUpperCase();
        if (name === 'CLUSTER' && sub === 'SLOTS') out += slots(port(), asked++);
        else if (name === 'CLUSTER') out += `-ERR unknown subcommand '${sub}'. Try CLUSTER HELP.\r\n`;
        else if (CONTROL.has(name)) out += OK;
        else {
          commands++;
          out += reply(args, port());
        }
      }
      if (out.length > 0) socket.write(out, 'latin1');
    });
  });
  const port = () => server.address().port;
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () =>
      resolve({
        port: port(),
        /** CLUSTER SLOTS questions answered so far. */
        asked: () => asked,
        /** Data commands answered so far. */
        commands: () => commands,
        close: () =>
          new Promise((res) => {
            for (const s of sockets) s.destroy();
            server.close(() => res());
          }),
      }),
    );
  });
}
