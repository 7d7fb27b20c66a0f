/**
 * The handshake a connection runs once its byte stream is up and before the
 * clock starts: HELLO 3 (with AUTH inside it) or AUTH, then SELECT, then
 * CLIENT SETNAME respbench, sent in one write and answered in order. Paired
 * with crates/respbench-core/src/handshake.rs: the same commands, the same
 * bytes, the same messages.
 *
 * A plan that asks for none of it (no password, no --dbnum, RESP2) sends
 * nothing: a server that knows only SET/GET-shaped commands sees the same
 * traffic as before. The password never appears in a message: error texts
 * name the command, never its arguments.
 */
import type net from 'node:net';
import type { Plan } from './plan.js';
import { ProtocolError, ReplyKind, ReplyReader } from './reply.js';
import { redactText } from '../secrets.js';

/** One command of the handshake. */
export interface HandshakeStep {
  args: string[];
  /** How messages name it: "AUTH", "HELLO 3", "SELECT 3" (never the password). */
  what: string;
  /** An error reply to it does not fail the handshake (the client name is a courtesy). */
  optional: boolean;
}

/** The type byte of a RESP3 push frame ('>'), which answers no request. */
const PUSH = 0x3e;

/** The name a connection gives itself (CLIENT LIST shows it). */
export const CLIENT_NAME = 'respbench';

/** What the plan asks to send before the load; empty when nothing. */
export function handshakeSteps(plan: Pick<Plan, 'user' | 'password' | 'dbnum' | 'resp3' | 'clientTracking' | 'readOnly'>): HandshakeStep[] {
  const steps: HandshakeStep[] = [];
  if (plan.resp3) {
    const auth = plan.password !== null ? ['AUTH', plan.user ?? 'default', plan.password] : [];
    steps.push({ args: ['HELLO', '3', ...auth], what: 'HELLO 3', optional: false });
  } else if (plan.password !== null) {
    steps.push({ args: plan.user !== null ? ['AUTH', plan.user, plan.password] : ['AUTH', plan.password], what: 'AUTH', optional: false });
  }
  if (plan.dbnum !== null) steps.push({ args: ['SELECT', String(plan.dbnum)], what: `SELECT ${plan.dbnum}`, optional: false });
  if (plan.clientTracking) steps.push({ args: ['CLIENT', 'TRACKING', 'on'], what: 'CLIENT TRACKING on', optional: false });
  // --read-from: a cluster replica serves reads of its primary's slots only after READONLY.
  if (plan.readOnly) steps.push({ args: ['READONLY'], what: 'READONLY', optional: false });
  if (steps.length > 0) steps.push({ args: ['CLIENT', 'SETNAME', CLIENT_NAME], what: 'CLIENT SETNAME', optional: true });
  return steps;
}

/** The steps as one buffer of RESP arrays of bulk strings (UTF-8 arguments). */
export function handshakeBytes(steps: HandshakeStep[]): Buffer {
  const parts: Buffer[] = [];
  for (const step of steps) {
    parts.push(Buffer.from(`*${step.args.length}\r\n`));
    for (const arg of step.args) {
      const bytes = Buffer.from(arg, 'utf8');
      parts.push(Buffer.from(`$${bytes.length}\r\n`), bytes, Buffer.from('\r\n'));
    }
  }
  return Buffer.concat(parts);
}

/** The handshake failed: the text for the user (one line, no secret). */
export class HandshakeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'HandshakeError';
  }
}

/** The user the server will take us for, as messages name it. */
function userName(plan: Pick<Plan, 'user'>): string {
  return plan.user ?? 'default';
}

/**
 * What an error reply to a handshake step means for the user. `error` is the
 * reply's text without the '-'.
 */
export function handshakeFailureText(plan: Pick<Plan, 'user' | 'password' | 'dbnum'>, step: HandshakeStep, error: string): string {
  const text = redactText(error, plan.password);
  const user = userName(plan);
  if (/^NOAUTH\b/.test(text)) return `the server requires a password (${step.what} answered: ${text}): give it with -a/--pass or REDISCLI_AUTH`;
  if (/^NOPERM\b/.test(text)) return `user '${user}' may not run ${step.what.split(' ')[0]} (${text})`;
  if (step.args[0] === 'HELLO' && (/^NOPROTO\b/.test(text) || /unknown command/i.test(text))) {
    return `HELLO 3 failed: ${text} (the server does not speak RESP3: leave out -3/--resp3)`;
  }
  // HELLO 3 is about logging in only when it carried a password the server refused.
  if (step.args[0] === 'AUTH' || (step.args[0] === 'HELLO' && plan.password !== null && refusesLogin(text))) return `authentication failed for user '${user}': ${text}`;
  if (step.args[0] === 'HELLO') return `HELLO 3 failed: ${text}`;
  if (step.args[0] === 'SELECT') return `cannot select database ${plan.dbnum}: ${text}`;
  return `${step.what} failed: ${text}`;
}

/** An error reply that refuses a login (Redis: WRONGPASS; older servers and look-alikes: "invalid password", "AUTH …"). */
function refusesLogin(text: string): boolean {
  return /^WRONGPASS\b/.test(text) || /\b(auth|password)/i.test(text);
}

/**
 * What a run-time error reply means when it ends the run at once: NOAUTH
 * (not, or no longer, logged in) and NOPERM (the ACL user may not run this
 * command or touch these keys) would answer every request the same way, so a
 * rate of them is no measurement. Null for any other error reply.
 */
export function fatalReplyText(errorText: string, user: string | null): string | null {
  if (errorText.startsWith('NOAUTH')) return `the server requires a password (${errorText}): give it with -a/--pass or REDISCLI_AUTH`;
  if (errorText.startsWith('NOPERM')) return `user '${user ?? 'default'}' is not allowed this (${errorText})`;
  return null;
}

/**
 * Runs the plan's handshake over a connected socket: one write, then one
 * reply per step, in order, within `timeoutMs` (0: no limit). Resolves when
 * every step is answered; rejects with a HandshakeError (or `interrupted()`'s
 * error when `signal` aborts). A push frame (RESP3 '>') before a reply is
 * skipped. Nothing is expected after the last reply (the server sends nothing
 * unasked before the first request), as in the native engine.
 */
export function runHandshake(socket: net.Socket, plan: Plan, timeoutMs: number, signal: AbortSignal | undefined, interrupted: () => Error): Promise<void> {
  const steps = handshakeSteps(plan);
  if (steps.length === 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const reader = new ReplyReader(1024);
    let answered = 0;
    let failure: string | null = null;
    let settled = false;
    const settle = (err: Error | null) => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      socket.off('data', onData);
      socket.off('error', onError);
      socket.off('close', onClose);
      if (err) {
        socket.destroy();
        reject(err);
        return;
      }
      // Without a 'data' listener a flowing socket would drop what comes
      // next: hold it until the Connection listens (and resumes it).
      socket.pause();
      resolve();
    };
    const onAbort = () => settle(interrupted());
    const onError = (err: Error) => settle(new HandshakeError(`handshake: ${err.message}`));
    const onClose = () => settle(new HandshakeError(`the server closed the connection during the handshake after ${answered} of ${steps.length} replies${failure ? ` (${failure})` : ''}`));
    const onData = (chunk: Buffer) => {
      reader.push(chunk);
      try {
        while (answered < steps.length && reader.pending()) {
          const at = reader.pos;
          if (!reader.next()) break;
          const s = reader.scanner;
          if (reader.buf[at] === PUSH) continue;
          const step = steps[answered++];
          if (s.kind === ReplyKind.Error && !step.optional && failure === null) {
            failure = handshakeFailureText(plan, step, reader.buf.toString('utf8', s.payloadStart, s.payloadStart + Math.min(s.payloadLen, 300)));
          }
        }
        reader.keepRest();
      } catch (err) {
        if (err instanceof ProtocolError) return settle(new HandshakeError(`protocol error in the handshake's replies: ${err.reason}: "${err.bytes}"`));
        throw err;
      }
      if (answered === steps.length) settle(failure === null ? null : new HandshakeError(failure));
    };
    const timer = timeoutMs > 0
      ? setTimeout(() => settle(new HandshakeError(`no reply to the handshake (${steps[answered]?.what ?? 'the last step'}) within ${timeoutMs} ms (--timeout)`)), timeoutMs)
      : null;
    if (signal?.aborted) return settle(interrupted());
    signal?.addEventListener('abort', onAbort, { once: true });
    socket.on('data', onData);
    socket.on('error', onError);
    socket.on('close', onClose);
    socket.write(handshakeBytes(steps));
  });
}
