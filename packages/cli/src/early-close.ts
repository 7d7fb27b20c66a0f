/**
 * A run whose connections were closed before any reply, when TLS is why:
 * told as the connect failure it is (one line, no table of zeros, no "may
 * have crashed"), the same for both engines since it is read from their
 * result here, once, after the run (off the hot path).
 *
 * - Without --tls on a port that speaks TLS: OpenSSL resets a connection
 *   that sends plain text, which looks like a crash. A TLS handshake to the
 *   port that gets a TLS answer (any certificate) means the run needs --tls.
 * - With --tls, a TLS 1.3 server refuses a client certificate only after the
 *   handshake: the engines' first read gets the alert, already in words.
 */
import net from 'node:net';
import tls from 'node:tls';
import type { Plan, RawResult } from './engine-js/plan.js';
import { printableTarget } from './printable.js';

/** How long the TLS question may take (it comes after a failed run). */
const PROBE_MS = 1000;

/** Whether the port answers a TLS handshake: completes it, or refuses it with a TLS alert. */
export function speaksTls(host: string, port: number, timeoutMs = PROBE_MS): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = tls.connect({ host, port, rejectUnauthorized: false, servername: net.isIP(host) ? undefined : host });
    const done = (yes: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(yes);
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    socket.once('secureConnect', () => done(true));
    socket.once('error', (err: NodeJS.ErrnoException) => done(/^ERR_SSL_.*ALERT/.test(err.code ?? '')));
    socket.once('close', () => done(false));
  });
}

/** The engine's result, its failure told as a connect failure when TLS is why the connections closed early. */
export async function explainEarlyClose(plan: Plan, raw: RawResult): Promise<RawResult> {
  const failure = raw.failure;
  if (failure?.kind !== 'closed' || raw.requests > 0 || raw.preloadRequests > 0) return raw;
  if (plan.tls !== null) {
    if (!/TLS alert "/.test(failure.message)) return raw;
    return { ...raw, failure: { kind: 'connect', message: failure.message.replace(/ after 0 replies$/, '') } };
  }
  if ((plan.socket ?? null) !== null || (plan.cluster ?? null) !== null) return raw;
  if (!(await speaksTls(plan.host, plan.port))) return raw;
  const target = printableTarget(plan.host, plan.port);
  return { ...raw, failure: { kind: 'connect', message: `${target} closed the connection before any reply: the server expects TLS: add --tls` } };
}
