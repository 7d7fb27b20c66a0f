/**
 * How a plain socket's bytes reach its reader without a Buffer per read.
 * By default Node makes a new Buffer for every read of a socket and emits
 * it as 'data': at pipeline 1 that is one read per request, and with the
 * event's own objects about 600 bytes of garbage per request (a minor GC
 * every few thousand requests; measured: a bare SET ping-pong over 50
 * sockets made 836 bytes per request with 'data', 203 with this, and ran
 * 23% faster). Node's `onread` option reads into a buffer we give instead
 * and calls back with the byte count. Every plain TCP and unix socket of
 * this thread shares one such buffer: libuv reads one socket at a time and
 * the callback consumes the read before it returns (the Link's reply loop
 * copies an incomplete reply into its own carry buffer), so nothing is
 * read into it while another read's bytes are still wanted.
 *
 * Until a Link takes the socket over (the handshake, cluster discovery, a
 * topology refresh read it as a stream), each read is copied out and
 * emitted as 'data' when something listens, as Node would; with nobody
 * listening (a socket with no handshake, opened while the phase's others
 * open) the copy waits, as Node's own buffer would keep it, and the Link
 * gets it first (`deliverEarly`): a greeting, or "-ERR max number of
 * clients reached" before a close, is read, not lost. TLS sockets
 * (node:tls reads the TCP socket under it itself) keep 'data'.
 */
import type net from 'node:net';

/** What a read's bytes go to: `buf[0, len)`, valid until the callback returns. */
export type ReadInto = (buf: Buffer, len: number) => void;

/** Larger than any single read of a loopback socket in practice; libuv fills at most this much per read. */
const READ_BUFFER_BYTES = 64 * 1024;

let shared: Buffer | null = null;

interface Hook {
  socket: net.Socket | null;
  to: ReadInto | null;
  /** Reads no one has taken yet, copied, in order (see above). */
  early: Buffer[];
}

const hooks = new WeakMap<net.Socket, Hook>();

/**
 * net.connect options that read into the shared buffer, and `bind`, to be
 * called with the socket net.connect made from them.
 */
export function sharedReads(): { onread: { buffer: Buffer; callback: (n: number, buf: Buffer) => boolean }; bind(socket: net.Socket): net.Socket } {
  const buffer = shared ?? (shared = Buffer.allocUnsafe(READ_BUFFER_BYTES));
  const hook: Hook = { socket: null, to: null, early: [] };
  return {
    onread: {
      buffer,
      callback: (n: number, buf: Buffer) => {
        const to = hook.to;
        if (to !== null && hook.early.length === 0) to(buf, n);
        else {
          const copy = Buffer.from(buf.subarray(0, n));
          const socket = hook.socket;
          // Before a Link: a 'data' event of its own when something listens (the reader may keep it), else kept.
          if (to === null && socket !== null && socket.listenerCount('data') > 0) {
            for (const e of hook.early.splice(0)) socket.emit('data', e);
            socket.emit('data', copy);
          } else hook.early.push(copy);
        }
        // (false would pause the socket)
        return true;
      },
    },
    bind(socket: net.Socket): net.Socket {
      hook.socket = socket;
      hooks.set(socket, hook);
      return socket;
    },
  };
}

/**
 * Sends `socket`'s reads to `to` from now on, with no 'data' events, once
 * what came before is delivered (deliverEarly); false when the socket does
 * not read into the shared buffer (TLS): listen to 'data' instead.
 */
export function takeReads(socket: net.Socket, to: ReadInto): boolean {
  const hook = hooks.get(socket);
  if (hook === undefined) return false;
  hook.to = to;
  return true;
}

/** Hands what `socket` read before its reader took it (takeReads) to that reader, in order; later reads follow. */
export function deliverEarly(socket: net.Socket): void {
  const hook = hooks.get(socket);
  if (hook === undefined || hook.to === null) return;
  while (hook.early.length > 0) {
    const b = hook.early.shift()!;
    hook.to(b, b.length);
  }
}
