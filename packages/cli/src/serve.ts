/**
 * `respbench serve`: a small kvstore-shaped RESP server, a DEMO AND TEST
 * TARGET only (in memory, no persistence, one thread). It answers the
 * kvstore family's commands in their `key value` shape so that the tool can
 * be tried and tested on a machine with no server of its own:
 *
 *   SET/GET, RSET/RGET, HSET/HGET (each family its own store), DEL, EXISTS,
 *   PING, ECHO, DBSIZE, FLUSHALL/FLUSHDB; anything else gets -ERR.
 *
 * `--embedded` runs it in a child process on a free loopback port for the
 * length of one run.
 */
import { spawn } from 'node:child_process';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { ReplyScanner } from './engine-js/reply.js';

const OK = Buffer.from('+OK\r\n');
const PONG = Buffer.from('+PONG\r\n');
const NIL = Buffer.from('$-1\r\n');
const CRLF = Buffer.from('\r\n');

type Store = Map<string, Buffer>;

class KvStore {
  readonly families: Record<'array' | 'rbtree' | 'hash', Store> = { array: new Map(), rbtree: new Map(), hash: new Map() };

  size(): number {
    return this.families.array.size + this.families.rbtree.size + this.families.hash.size;
  }

  clear(): void {
    for (const s of Object.values(this.families)) s.clear();
  }
}

const FAMILY_OF: Record<string, ['array' | 'rbtree' | 'hash', 'set' | 'get']> = {
  SET: ['array', 'set'],
  GET: ['array', 'get'],
  RSET: ['rbtree', 'set'],
  RGET: ['rbtree', 'get'],
  HSET: ['hash', 'set'],
  HGET: ['hash', 'get'],
};

function bulk(b: Buffer): Buffer[] {
  return [Buffer.from(`$${b.length}\r\n`), b, CRLF];
}

function integer(n: number): Buffer {
  return Buffer.from(`:${n}\r\n`);
}

function error(text: string): Buffer {
  return Buffer.from(`-ERR ${text}\r\n`);
}

/** Executes one command; pushes its reply chunks onto `out`. */
function execute(store: KvStore, args: Buffer[], out: Buffer[]): void {
  const name = args[0].toString('latin1').toUpperCase();
  const family = FAMILY_OF[name];
  if (family) {
    const [which, op] = family;
    const map = store.families[which];
    if (op === 'set') {
      if (args.length !== 3) return void out.push(error(`wrong number of arguments for '${name.toLowerCase()}' command`));
      map.set(args[1].toString('latin1'), Buffer.from(args[2]));
      out.push(OK);
    } else {
      if (args.length !== 2) return void out.push(error(`wrong number of arguments for '${name.toLowerCase()}' command`));
      const v = map.get(args[1].toString('latin1'));
      if (v === undefined) out.push(NIL);
      else out.push(...bulk(v));
    }
    return;
  }
  switch (name) {
    case 'PING':
      out.push(args.length > 1 ? bulk(args[1]).reduce((a, b) => Buffer.concat([a, b])) : PONG);
      return;
    case 'ECHO':
      if (args.length !== 2) return void out.push(error("wrong number of arguments for 'echo' command"));
      out.push(...bulk(args[1]));
      return;
    case 'DEL':
    case 'EXISTS': {
      let n = 0;
      for (const k of args.slice(1)) {
        const key = k.toString('latin1');
        for (const m of Object.values(store.families)) {
          if (m.has(key)) {
            n++;
            if (name === 'DEL') m.delete(key);
          }
        }
      }
      out.push(integer(n));
      return;
    }
    case 'DBSIZE':
      out.push(integer(store.size()));
      return;
    case 'FLUSHALL':
    case 'FLUSHDB':
      store.clear();
      out.push(OK);
      return;
    default:
      out.push(error(`unknown command '${name.toLowerCase()}' (respbench serve is a demo/test target: SET/GET, RSET/RGET, HSET/HGET, DEL, EXISTS, PING, ECHO, DBSIZE, FLUSHALL)`));
  }
}

/** Parses the complete commands (RESP arrays of bulk strings) in buf[0..end); returns bytes consumed. */
function parseCommands(buf: Buffer, end: number, onCommand: (args: Buffer[]) => void): number {
  const scanner = new ReplyScanner();
  let pos = 0;
  while (pos < end) {
    const next = scanner.scan(buf, pos, end);
    if (next < 0) break;
    if (buf[pos] !== 42) throw new Error('expected a RESP array of bulk strings');
    const args: Buffer[] = [];
    let p = buf.indexOf(CRLF, pos) + 2;
    while (p < next) {
      if (buf[p] !== 36) throw new Error('expected a bulk string argument');
      const lineEnd = buf.indexOf(CRLF, p);
      const len = Number(buf.toString('latin1', p + 1, lineEnd));
      args.push(buf.subarray(lineEnd + 2, lineEnd + 2 + len));
      p = lineEnd + 2 + len + 2;
    }
    if (args.length === 0) throw new Error('empty command');
    onCommand(args);
    pos = next;
  }
  return pos;
}

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

export interface EmbeddedServer {
  port: number;
  stop(): Promise<void>;
}

/** Starts `respbench serve --port 0` in a child process and waits for its port. */
export function spawnEmbedded(): Promise<EmbeddedServer> {
  const bin = fileURLToPath(new URL('./bin.js', import.meta.url));
  const child = spawn(process.execPath, [bin, 'serve', '--port', '0', '--exit-with-stdin'], { stdio: ['pipe', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error('the embedded server did not start within 10 s'));
    }, 10_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the embedded server exited with status ${code} before listening`));
    });
    child.stdout!.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const m = /listening on [\d.]+:(\d+)/.exec(text);
      if (!m) return;
      clearTimeout(timer);
      child.removeAllListeners('exit');
      child.stdout!.removeAllListeners('data');
      child.stdout!.resume();
      resolve({
        port: Number(m[1]),
        stop: () =>
          new Promise<void>((res) => {
            if (child.exitCode !== null || child.signalCode !== null) return res();
            child.once('exit', () => res());
            child.kill('SIGTERM');
          }),
      });
    });
  });
}
