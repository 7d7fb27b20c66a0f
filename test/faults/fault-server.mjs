#!/usr/bin/env node
/**
 * A FAULT-INJECTING RESP SERVER, A TEST TARGET ONLY: it answers SET/GET-shaped
 * commands (any `NAME key value` is a write answered +OK, any `NAME key` a read
 * answered with the value last written or nil) and, after a number of good
 * replies on a connection, misbehaves in one chosen way. The fault tests run
 * respbench against it to pin what a user sees when a server dies, stalls or
 * sends broken bytes.
 *
 *   node test/faults/fault-server.mjs --mode <fault> [--after N] [--every N] [--port 0]
 *
 * prints `fault-server (respbench test target) mode <fault> listening on 127.0.0.1:<port>`
 * and serves until killed. `import { startFaultServer } from './fault-server.mjs'`
 * runs the same server in-process.
 *
 * Modes (N = --after, the good replies each connection gets first):
 *   ok                   a well-behaved server
 *   close-after          closes the connection (FIN) after N replies
 *   reset-mid-reply      after N replies, writes half a reply and resets the connection (RST)
 *   byte-by-byte         every reply byte in its own write, each flushed; a valid run must pass
 *   bad-type-byte        after N replies, answers with a line whose type byte is not RESP
 *   bad-length           after N replies, answers with a bulk string of length "abc"
 *   length-past-end      after N replies, declares a 100-byte bulk string, sends 5 bytes, closes
 *   garbage-after-reply  after N replies, a valid +OK followed at once by bytes that are not RESP
 *   stall                after N replies, reads everything and answers nothing
 *   stall-mid-reply      after N replies, sends the first bytes of a reply, then nothing more
 *   error-replies        every --every'th reply (default 10) is `-ERR injected fault` (or `-<--error-text>`)
 *   reset-on-accept      resets every connection (RST) as soon as it is accepted
 *   close-on-accept      closes every connection (FIN) as soon as it is accepted
 *   full-on-accept       answers every connection with `-ERR max number of clients reached` as soon as it is
 *                        accepted, and closes it (what redis-server does past maxclients)
 *   greeting             sends +OK as soon as a connection is accepted, before any request, then as ok
 *   push-frames          a RESP3 push frame (>) on accept and before every reply, otherwise as ok
 *   forgetful            acknowledges every write with +OK and stores nothing (reads find nil)
 *   ignores-overwrites   acknowledges every write with +OK but keeps a key's first value (the kvstore's lost overwrite)
 *   hold-last            Nagle-ish: of the replies to each read, the last is held back and goes out with the
 *                        next read's replies, or --every ms (default 10) later when no request comes
 *   verbatim             answers reads with RESP3 verbatim strings (=N\r\ntxt:VALUE\r\n), otherwise as ok
 *   corrupt-last-byte    answers reads with the value written, its last byte changed
 */
import net from 'node:net';
import { fileURLToPath } from 'node:url';

export const MODES = [
  'ok',
  'close-after',
  'reset-mid-reply',
  'byte-by-byte',
  'bad-type-byte',
  'bad-length',
  'length-past-end',
  'garbage-after-reply',
  'stall',
  'stall-mid-reply',
  'error-replies',
  'reset-on-accept',
  'close-on-accept',
  'full-on-accept',
  'greeting',
  'push-frames',
  'forgetful',
  'ignores-overwrites',
  'hold-last',
  'verbatim',
  'corrupt-last-byte',
];

/** Modes that answer every request (none of them breaks after --after replies). */
const ANSWERS_ALL = new Set(['ok', 'byte-by-byte', 'error-replies', 'greeting', 'push-frames', 'forgetful', 'ignores-overwrites', 'hold-last', 'verbatim', 'corrupt-last-byte']);

/** The push frame push-frames sends: out-of-band data, as pub/sub or client tracking would. */
export const PUSH_FRAME = Buffer.from('>3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$5\r\nhello\r\n');

/** What each malformed mode sends instead of its (N+1)th reply. */
export const BROKEN_REPLY = {
  'bad-type-byte': Buffer.from('?what\r\n'),
  'bad-length': Buffer.from('$abc\r\nxyz\r\n'),
  'length-past-end': Buffer.from('$100\r\nshort'),
  'garbage-after-reply': Buffer.from('+OK\r\n\x00\xffgarbage\r\n', 'latin1'),
};

const OK = Buffer.from('+OK\r\n');
const NIL = Buffer.from('$-1\r\n');
const CRLF = Buffer.from('\r\n');

/**
 * Splits complete commands (RESP arrays of bulk strings) off the front of
 * buf; returns [commands, bytes used]. Inline commands are not needed: the
 * client under test always sends arrays.
 */
export function takeCommands(buf) {
  const commands = [];
  let pos = 0;
  outer: while (pos < buf.length) {
    if (buf[pos] !== 0x2a) throw new Error(`expected a RESP array at byte ${pos}`);
    let lineEnd = buf.indexOf(CRLF, pos);
    if (lineEnd < 0) break;
    const count = Number(buf.toString('latin1', pos + 1, lineEnd));
    let p = lineEnd + 2;
    const args = [];
    for (let i = 0; i < count; i++) {
      if (p >= buf.length) break outer;
      if (buf[p] !== 0x24) throw new Error(`expected a bulk string at byte ${p}`);
      lineEnd = buf.indexOf(CRLF, p);
      if (lineEnd < 0) break outer;
      const len = Number(buf.toString('latin1', p + 1, lineEnd));
      if (lineEnd + 2 + len + 2 > buf.length) break outer;
      args.push(buf.subarray(lineEnd + 2, lineEnd + 2 + len));
      p = lineEnd + 2 + len + 2;
    }
    commands.push(args);
    pos = p;
  }
  return [commands, pos];
}

function answer(store, args, mode) {
  if (args.length >= 3) {
    const key = args[1].toString('latin1');
    if (mode === 'ignores-overwrites' && store.has(key)) return OK;
    if (mode !== 'forgetful') store.set(key, Buffer.from(args[args.length - 1]));
    return OK;
  }
  if (args.length === 2) {
    const v = store.get(args[1].toString('latin1'));
    if (v === undefined) return NIL;
    if (mode === 'verbatim') return Buffer.concat([Buffer.from(`=${v.length + 4}\r\ntxt:`), v, CRLF]);
    if (mode === 'corrupt-last-byte' && v.length > 0) {
      const bad = Buffer.from(v);
      bad[bad.length - 1] = bad[bad.length - 1] === 0x21 ? 0x22 : 0x21;
      return Buffer.concat([Buffer.from(`$${bad.length}\r\n`), bad, CRLF]);
    }
    return Buffer.concat([Buffer.from(`$${v.length}\r\n`), v, CRLF]);
  }
  return OK;
}

/** Writes each byte on its own and waits until it has left before the next. */
async function writeByteByByte(socket, bytes) {
  for (let i = 0; i < bytes.length; i++) {
    if (socket.destroyed) return;
    await new Promise((resolve) => socket.write(bytes.subarray(i, i + 1), () => setImmediate(resolve)));
  }
}

/**
 * Starts the server on host:port (0 = a free port). Resolves to
 * { port, connections(), close() }.
 */
export function startFaultServer({ mode = 'ok', after = 10, every = 10, errorText = 'ERR injected fault', port = 0, host = '127.0.0.1' } = {}) {
  if (!MODES.includes(mode)) throw new Error(`unknown mode ${mode}; one of ${MODES.join(', ')}`);
  const store = new Map();
  const sockets = new Set();
  let accepted = 0;
  const server = net.createServer((socket) => {
    accepted++;
    sockets.add(socket);
    // hold-last: the reply held back, and the timer that sends it alone.
    let heldReply = null;
    let heldTimer = null;
    socket.setNoDelay(true);
    socket.on('close', () => {
      sockets.delete(socket);
      clearTimeout(heldTimer);
    });
    socket.on('error', () => socket.destroy());
    if (mode === 'reset-on-accept') {
      socket.resetAndDestroy();
      return;
    }
    if (mode === 'close-on-accept') {
      socket.end();
      return;
    }
    if (mode === 'full-on-accept') {
      socket.end('-ERR max number of clients reached\r\n');
      return;
    }
    if (mode === 'greeting') socket.write(OK);
    if (mode === 'push-frames') socket.write(PUSH_FRAME);
    let carry = Buffer.alloc(0);
    let replies = 0;
    let broken = false;
    // byte-by-byte replies go out in order through one chain of writes.
    let queue = Promise.resolve();
    socket.on('data', (chunk) => {
      if (broken) return;
      const buf = carry.length > 0 ? Buffer.concat([carry, chunk]) : chunk;
      let commands;
      let used;
      try {
        [commands, used] = takeCommands(buf);
      } catch (err) {
        socket.end(`-ERR fault-server: ${err.message}\r\n`);
        return;
      }
      carry = Buffer.from(buf.subarray(used));
      const out = [];
      for (const args of commands) {
        if (replies >= after && !ANSWERS_ALL.has(mode)) {
          broken = true;
          if (out.length > 0) socket.write(Buffer.concat(out));
          misbehave(socket, mode, answer(store, args, mode));
          return;
        }
        replies++;
        if (mode === 'push-frames') out.push(PUSH_FRAME);
        if (mode === 'error-replies' && replies % every === 0) out.push(Buffer.from(`-${errorText}\r\n`));
        else out.push(answer(store, args, mode));
      }
      if (out.length === 0) return;
      if (mode === 'hold-last') {
        // What a server without TCP_NODELAY does to a client that waits for every reply before sending more.
        if (heldReply !== null) out.unshift(heldReply);
        clearTimeout(heldTimer);
        heldReply = out.pop();
        if (out.length > 0) socket.write(Buffer.concat(out));
        heldTimer = setTimeout(() => {
          if (heldReply !== null && !socket.destroyed) socket.write(heldReply);
          heldReply = null;
        }, every);
        return;
      }
      const bytes = Buffer.concat(out);
      if (mode === 'byte-by-byte') queue = queue.then(() => writeByteByByte(socket, bytes));
      else socket.write(bytes);
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      resolve({
        port: server.address().port,
        /** Connections accepted so far. */
        connections: () => accepted,
        close: () =>
          new Promise((res) => {
            for (const s of sockets) s.destroy();
            server.close(() => res());
          }),
      });
    });
  });
}

function misbehave(socket, mode, goodReply) {
  switch (mode) {
    case 'close-after':
      socket.end();
      return;
    case 'reset-mid-reply': {
      // Half of a reply long enough to be split, then RST instead of FIN.
      const half = Buffer.from('$40\r\n0123456789');
      socket.write(half, () => socket.resetAndDestroy());
      return;
    }
    case 'length-past-end':
      socket.end(BROKEN_REPLY[mode]);
      return;
    case 'bad-type-byte':
    case 'bad-length':
    case 'garbage-after-reply':
      // Keep the connection open: the client must notice the bytes, not a close.
      socket.write(BROKEN_REPLY[mode]);
      return;
    case 'stall-mid-reply':
      socket.write(Buffer.from('$40\r\n0123456789'));
      return;
    case 'stall':
      // Swallow everything from now on and never answer.
      void goodReply;
      return;
    default:
      throw new Error(`mode ${mode} has no fault`);
  }
}

function parseArgs(argv) {
  const opts = { mode: 'ok', after: 10, every: 10, errorText: 'ERR injected fault', port: 0, host: '127.0.0.1' };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = argv[++i];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    if (flag === '--mode') opts.mode = value;
    else if (flag === '--after') opts.after = Number(value);
    else if (flag === '--every') opts.every = Number(value);
    else if (flag === '--port') opts.port = Number(value);
    else if (flag === '--error-text') opts.errorText = value;
    else if (flag === '--host') opts.host = value;
    else throw new Error(`unknown flag ${flag}`);
  }
  return opts;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  try {
    const opts = parseArgs(process.argv.slice(2));
    const server = await startFaultServer(opts);
    process.stdout.write(`fault-server (respbench test target) mode ${opts.mode} listening on ${opts.host}:${server.port}\n`);
    const stop = () => void server.close().then(() => process.exit(0));
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  } catch (err) {
    process.stderr.write(`fault-server: ${err.message}\n`);
    process.exit(2);
  }
}
