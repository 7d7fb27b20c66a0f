/**
 * Opening a connection: the one place a socket is opened and made ready for
 * load, so a Link only ever gets a ready socket (at the start of a phase,
 * for a node a redirection names, and under --reconnect). Paired with
 * crates/respbench-core/src/open.rs.
 */
import type net from 'node:net';
import { HandshakeError, runHandshake } from './handshake.js';
import type { Plan } from './plan.js';
import { ConnectInterrupted, connectTransport, peerLabel } from './transport.js';

export { ConnectInterrupted };

/** Connect timeout when the plan has no reply timeout (as the native engine). */
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;

/**
 * Opens a connection to the plan's server and makes it ready for load: the
 * one place that does, so the run loop only ever gets a ready socket. The
 * transport first (connectTransport: TCP, a unix socket, or TLS with its
 * handshake done), then makeReady. Each gives up after the plan's --timeout
 * (10 s when that is 0). Rejects with ConnectInterrupted when `signal`
 * aborts, with a message for the user otherwise (the same texts as the
 * native engine's).
 */
export async function openConnection(plan: Plan, signal?: AbortSignal): Promise<net.Socket> {
  const timeoutMs = plan.timeoutMs > 0 ? plan.timeoutMs : DEFAULT_CONNECT_TIMEOUT_MS;
  const socket = await connectTransport(plan, timeoutMs, signal);
  await makeReady(socket, plan, timeoutMs, signal);
  return socket;
}

/**
 * What a ready byte stream (TCP, unix or TLS, from connectTransport) needs
 * before the first request: TCP_NODELAY, then the plan's handshake (HELLO 3 /
 * AUTH, SELECT, CLIENT SETNAME; handshake.ts) answered within its own
 * `timeoutMs`, whatever the transport. A failed handshake rejects with its
 * one-line reason (never the password).
 */
async function makeReady(socket: net.Socket, plan: Plan, timeoutMs: number, signal?: AbortSignal): Promise<void> {
  socket.setNoDelay(true);
  try {
    await runHandshake(socket, plan, timeoutMs, signal, () => new ConnectInterrupted());
  } catch (err) {
    if (err instanceof HandshakeError) throw new Error(`${peerLabel(socket) ?? `${plan.host}:${plan.port}`}: ${err.message}`);
    throw err;
  }
}
