/**
 * `--metrics-listen`: an HTTP endpoint serving /metrics while the session
 * lasts. It binds before any load goes out, so a port already in use is
 * said at once; it answers from the registry's last figures and does no
 * work between scrapes.
 */
import http from 'node:http';
import { CONTENT_TYPE, formatFor, render } from './exposition.js';
import type { LiveMetrics } from './registry.js';

export interface ListenAddress {
  host: string;
  port: number;
}

export interface MetricsEndpoint {
  /** The address it listens on (the port the system picked for port 0). */
  url: string;
  close(): Promise<void>;
}

/** Why a listen failed, in words, naming the flag. */
function listenError(at: ListenAddress, err: NodeJS.ErrnoException): Error {
  const where = `${at.host.includes(':') ? `[${at.host}]` : at.host}:${at.port}`;
  const why =
    err.code === 'EADDRINUSE'
      ? 'the port is already in use'
      : err.code === 'EADDRNOTAVAIL'
        ? 'no interface of this machine has that address'
        : err.code === 'EACCES'
          ? 'not allowed to listen there (ports below 1024 need privileges)'
          : (err.message ?? String(err));
  return new Error(`--metrics-listen ${where}: ${why}`);
}

export function startMetricsEndpoint(at: ListenAddress, metrics: LiveMetrics): Promise<MetricsEndpoint> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { Allow: 'GET, HEAD' }).end();
      return;
    }
    if (path !== '/metrics') {
      res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end('respbench serves /metrics\n');
      return;
    }
    const format = formatFor(req.headers.accept);
    const body = render(metrics, format);
    res.writeHead(200, { 'Content-Type': CONTENT_TYPE[format], 'Content-Length': Buffer.byteLength(body) });
    res.end(req.method === 'HEAD' ? undefined : body);
  });
  // A scraper's keep-alive connection must not hold the process open after the session.
  server.keepAliveTimeout = 1000;
  return new Promise((resolve, reject) => {
    server.once('error', (err) => reject(listenError(at, err as NodeJS.ErrnoException)));
    server.listen({ host: at.host, port: at.port }, () => {
      const addr = server.address();
      const port = typeof addr === 'object' && addr ? addr.port : at.port;
      const host = at.host.includes(':') ? `[${at.host}]` : at.host;
      resolve({
        url: `http://${host}:${port}/metrics`,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            server.closeAllConnections();
          }),
      });
    });
  });
}
