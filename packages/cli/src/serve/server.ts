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

export interface ServerOptions {
  /**
   * `--service-time`: every command takes this long, one at a time for the
   * whole server, so it serves at most 1e9 / serviceTimeNs commands per
   * second whatever the connections and pipeline (a server of known
   * capacity, for `respbench capacity`). 0 = reply at once.
   */
  serviceTimeNs?: number;
}

/** Serves on host:port (0 = any free port) in this process. */
export function startServer(port: number, host = '127.0.0.1', options: ServerOptions = {}): Promise<RunningServer> {
  const store = new KvStore();
  const clients = new Set<net.Socket>();
  const queue = options.serviceTimeNs ? new ServiceQueue(options.serviceTimeNs) : null;
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
        used = parseCommands(buf, buf.length, (args) => {
          // What the server itself saw, answered at once (it is not a command served on the clock).
          if (args.length === 1 && args[0].length === 4 && args[0].toString('latin1').toUpperCase() === 'INFO') return void out.push(infoReply(options.serviceTimeNs ?? 0, queue));
          if (!queue) return execute(store, args, out);
          // Executed now, in arrival order (the queue is one FIFO for the whole server, so that order is the order served); answered when its turn is over.
          const reply: Buffer[] = [];
          execute(store, args, reply);
          queue.push(socket, reply.length === 1 ? reply[0] : Buffer.concat(reply));
        });
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
            queue?.stop();
            server.close(() => res());
            for (const c of clients) c.destroy();
          }),
      });
    });
  });
}


/**
 * The one server-wide line of `--service-time`: commands are served one at a
 * time in arrival order, each taking `serviceNs` on a virtual clock (a
 * command starts when it arrived or when the one before it was done,
 * whichever is later). Nothing blocks and nothing spins: a turn sends the
 * replies whose time has come and sleeps until the next one is due.
 *
 * A timer fires a millisecond or so late, and a client with a few requests
 * in flight would then find the server idle by the time its next request
 * came: the capacity would depend on the connections and the machine's
 * timers. So a turn sends every reply due within LOOKAHEAD_NS (about one
 * timer tick), and the next turn is set that much before the next reply is
 * due: replies go out up to LOOKAHEAD_NS early (a lone request is answered
 * at once), but when each one is due never changes, so over any stretch of
 * load the server answers at most 1e9 / serviceNs commands per second
 * (plus one lookahead's worth), and, with a few in flight, that many.
 */
/** How far ahead of its due time a reply may go out: about one timer tick. */
const LOOKAHEAD_NS = 1_000_000;
/**
 * The most of its own lateness the server forgives: a turn that came L late
 * (a timer, a busy machine) sent its replies L late, and the requests the
 * clients sent back on them came L late too; counted from when they came,
 * the server would have been idle for L through no client's doing, and its
 * capacity would depend on the machine (`respbench capacity -c 8 -P 1`
 * against 200us found 3352/s, not 5000/s, on a busy 2-core machine; 4946/s
 * with this). So a request is taken as
 * come up to that lateness earlier: due times stay at least serviceNs apart,
 * and the capacity stays 1e9 / serviceNs at most.
 */
const FORGIVE_MAX_NS = 20_000_000;
/** A turn later than this is the machine holding the server back (a timer alone is about a millisecond late). */
const HELD_NS = 5_000_000;

export class ServiceQueue {
  /** Turns that sent their earliest reply more than HELD_NS after it was due, and how late they were in all: the machine's hold on this server (INFO). */
  readonly held = { turns: 0, lateNs: 0 };
  private readonly items: { socket: Pick<net.Socket, 'write' | 'writable'>; reply: Buffer; dueNs: number }[] = [];
  private head = 0;
  /** When the last command queued is done, ns on the monotonic clock. */
  private freeAtNs = 0;
  /** How late the last turn sent the earliest reply it sent (FORGIVE_MAX_NS at most). */
  private lateNs = 0;
  private timer: NodeJS.Timeout | null = null;
  private immediate: NodeJS.Immediate | null = null;

  /** `clock`: ns on a monotonic clock (a test gives its own). */
  constructor(
    private readonly serviceNs: number,
    private readonly clock: () => number = nowNs,
  ) {}

  push(socket: Pick<net.Socket, 'write' | 'writable'>, reply: Buffer): void {
    const now = this.clock();
    this.freeAtNs = Math.max(now - this.lateNs, this.freeAtNs) + this.serviceNs;
    this.items.push({ socket, reply, dueNs: this.freeAtNs });
    if (this.timer === null && this.immediate === null) this.schedule(now);
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    if (this.immediate) clearImmediate(this.immediate);
    this.timer = null;
    this.immediate = null;
    this.items.length = 0;
    this.head = 0;
  }

  private schedule(now: number): void {
    const next = this.items[this.head];
    if (!next) return;
    const waitNs = next.dueNs - LOOKAHEAD_NS - now;
    // Due within the lookahead: after the replies read in this turn of the event loop, not a timer tick later.
    if (waitNs <= 0) this.immediate = setImmediate(() => this.drain());
    else this.timer = setTimeout(() => this.drain(), waitNs / 1e6);
  }

  /** A turn: sends the replies due (within the lookahead) and sets the next turn. Called by its timer (and by a test). */
  drain(): void {
    this.timer = null;
    this.immediate = null;
    const now = this.clock();
    // Replies due now, gathered per socket so a pipelined batch goes out in one write.
    let socket: Pick<net.Socket, 'write' | 'writable'> | null = null;
    let batch: Buffer[] = [];
    const first = this.items[this.head];
    if (first) {
      const late = Math.max(0, now - first.dueNs);
      this.lateNs = Math.min(FORGIVE_MAX_NS, late);
      if (late > HELD_NS) {
        this.held.turns++;
        this.held.lateNs += late;
      }
    }
    const flush = () => {
      if (socket && socket.writable) socket.write(batch.length === 1 ? batch[0] : Buffer.concat(batch));
      batch = [];
    };
    while (this.head < this.items.length && this.items[this.head].dueNs <= now + LOOKAHEAD_NS) {
      const item = this.items[this.head++];
      if (item.socket !== socket) {
        flush();
        socket = item.socket;
      }
      batch.push(item.reply);
    }
    flush();
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items.splice(0, this.head);
      this.head = 0;
    }
    this.schedule(now);
  }
}

/**
 * `INFO`: the service time and how often the machine held the server back
 * (turns more than 5 ms late), so a test of a known capacity can tell a
 * server that was starved from a client that measured wrong.
 */
function infoReply(serviceTimeNs: number, queue: ServiceQueue | null): Buffer {
  const text = ['# respbench serve', `service_time_us:${serviceTimeNs / 1000}`, `held_turns:${queue?.held.turns ?? 0}`, `held_late_ms:${((queue?.held.lateNs ?? 0) / 1e6).toFixed(3)}`, ''].join('\r\n');
  return Buffer.from(`$${Buffer.byteLength(text)}\r\n${text}\r\n`);
}

function nowNs(): number {
  return Number(process.hrtime.bigint());
}
