/**
 * `-I` (redis-benchmark's idle mode): open -c connections, handshake and
 * all, and hold them open sending nothing until a signal — to see what a
 * server does with many idle clients (memory per client, timeouts,
 * maxclients). Both engines' connections open the same way (one open path,
 * engine-js/connection.ts); with no load to send there is nothing else for
 * an engine to do, so this runs in this process whichever --engine is asked.
 */
import type net from 'node:net';
import { openConnection } from './engine-js/connection.js';
import type { Plan } from './engine-js/plan.js';
import { Exit, EXIT } from './exit.js';
import { onStopSignals, SIGNAL_EXIT, type StopSignal } from './interrupt.js';
import type { CliIo } from './io.js';
import { printable, printableTarget } from './printable.js';

export async function runIdle(plan: Plan, io: CliIo): Promise<never> {
  const controller = new AbortController();
  let stoppedBy: StopSignal | null = null;
  const stopListening = onStopSignals((signal, n) => {
    if (n > 1) return;
    stoppedBy = signal;
    controller.abort();
  });
  const where = plan.socket ? printable(plan.socket) : printableTarget(plan.host, plan.port);
  const sockets: net.Socket[] = [];
  let closedByServer = 0;
  try {
    try {
      for (let i = 0; i < plan.connections && !controller.signal.aborted; i++) {
        const socket = await openConnection(plan, controller.signal);
        socket.on('error', () => undefined);
        socket.once('close', () => {
          if (!controller.signal.aborted) closedByServer++;
        });
        sockets.push(socket);
      }
    } catch (err) {
      if (!controller.signal.aborted) {
        io.stderr(`respbench: -I: ${printable((err as Error).message)} (${sockets.length} of ${plan.connections} connections were open)\n`);
        throw new Exit(EXIT.failed);
      }
    }
    if (!controller.signal.aborted) io.stdout(`idle: ${sockets.length} connections open to ${where}, sending nothing; waiting until interrupted (Ctrl-C)\n`);
    await new Promise<void>((resolve) => {
      if (controller.signal.aborted) resolve();
      else controller.signal.addEventListener('abort', () => resolve(), { once: true });
    });
    io.stdout(`idle: ${sockets.length} connections were open${closedByServer > 0 ? `, ${closedByServer} of them closed by the server meanwhile` : ''}; stopped by ${stoppedBy}\n`);
    throw new Exit(SIGNAL_EXIT[stoppedBy ?? 'SIGINT']);
  } finally {
    for (const s of sockets) s.destroy();
    stopListening();
  }
}
