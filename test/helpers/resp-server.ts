/**
 * A scriptable RESP server on loopback, a test target: every command (a RESP
 * array of bulk strings, as both engines send) gets the reply `answer` gives
 * for its arguments. For tests that need a server to say one particular
 * thing (refuse HELLO, echo AUTH's arguments in an error) that redis-server
 * will not say.
 */
import { readFileSync } from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';

/** One connection's state that `answer` may keep (what it logged in with). */
export interface RespSession {
  password: string | null;
}

export interface RespServer {
  port: number;
  /** Connections accepted so far. */
  connections(): number;
  close(): void;
}

/** Splits a complete command off the front of `buf`, or null when more bytes are needed. */
function parseCommand(buf: Buffer): { args: string[]; used: number } | null {
  if (buf.length === 0 || buf[0] !== 0x2a) return null;
  let at = buf.indexOf('\r\n');
  if (at < 0) return null;
  const n = Number(buf.toString('latin1', 1, at));
  let pos = at + 2;
  const args: string[] = [];
  for (let i = 0; i < n; i++) {
    at = buf.indexOf('\r\n', pos);
    if (at < 0) return null;
    const len = Number(buf.toString('latin1', pos + 1, at));
    if (buf.length < at + 2 + len + 2) return null;
    args.push(buf.toString('utf8', at + 2, at + 2 + len));
    pos = at + 2 + len + 2;
  }
  return { args, used: pos };
}

/**
 * `delayMs(args)`: how long to hold the reply to that command (a server slow
 * to answer the handshake, as fakeredis is to take 50 connections); the
 * replies stay in order.
 */
export async function startRespServer(
  answer: (args: string[], session: RespSession) => string,
  delayMs: (args: string[]) => number = () => 0,
  /**
   * Over TLS with this certificate and key, at OpenSSL security level 0: a
   * server certificate redis-server will not load (a 1024-bit RSA key, a
   * SHA-1 signature: Debian's OpenSSL runs at level 2).
   */
  tlsFiles?: { cert: string; key: string },
): Promise<RespServer> {
  let accepted = 0;
  const sockets = new Set<net.Socket>();
  const onConnection = (socket: net.Socket) => {
    accepted++;
    sockets.add(socket);
    let buf = Buffer.alloc(0);
    const session: RespSession = { password: null };
    let waiting: Promise<void> | null = null;
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
    socket.on('data', (chunk) => {
      buf = Buffer.concat([buf, chunk]);
      const out: string[] = [];
      let hold = 0;
      for (let parsed = parseCommand(buf); parsed; parsed = parseCommand(buf)) {
        buf = buf.subarray(parsed.used);
        out.push(answer(parsed.args, session));
        hold = Math.max(hold, delayMs(parsed.args));
      }
      if (out.length === 0) return;
      const text = out.join('');
      if (hold === 0 && !waiting) socket.write(text);
      else {
        // Behind a held reply: wait for it, so the replies keep their order.
        waiting = (waiting ?? Promise.resolve()).then(() => new Promise<void>((resolve) => setTimeout(() => {
          if (socket.writable) socket.write(text);
          resolve();
        }, hold)));
      }
    });
  };
  const server = tlsFiles
    ? tls.createServer({ cert: readFileSync(tlsFiles.cert), key: readFileSync(tlsFiles.key), ciphers: 'DEFAULT@SECLEVEL=0' }, onConnection).on('tlsClientError', () => undefined)
    : net.createServer(onConnection);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    connections: () => accepted,
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

/** Redis's reply to a command it does not know, quoting its arguments (as Redis does, passwords included). */
export function unknownCommand(args: string[]): string {
  return `-ERR unknown command '${args[0]}', with args beginning with: ${args.slice(1).map((a) => `'${a}'`).join(' ')}\r\n`;
}
