/**
 * The demo server's side of RESP: complete commands (arrays of bulk strings)
 * cut out of what a client sent.
 */
import { ReplyScanner } from '../engine-js/reply.js';

const CRLF = Buffer.from('\r\n');

/** Parses the complete commands (RESP arrays of bulk strings) in buf[0..end); returns bytes consumed. */
export function parseCommands(buf: Buffer, end: number, onCommand: (args: Buffer[]) => void): number {
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

