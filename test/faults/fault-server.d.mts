/** Types for fault-server.mjs, so TypeScript tests import it with types. */
export declare const MODES: readonly string[];
export declare const BROKEN_REPLY: Readonly<Record<string, Buffer>>;
/** What push-frames sends on accept and before every reply. */
export declare const PUSH_FRAME: Buffer;

export interface FaultServerOptions {
  /** One of MODES; default `ok`. */
  mode?: string;
  /** Good replies each connection gets before the fault; default 10. */
  after?: number;
  /** error-replies: every Nth reply is an error; default 10. */
  every?: number;
  /** error-replies: the error text, without the '-'; default `ERR injected fault`. */
  errorText?: string;
  /** 0 picks a free port. */
  port?: number;
  host?: string;
}

export interface FaultServer {
  port: number;
  /** Connections accepted so far. */
  connections(): number;
  close(): Promise<void>;
}

export declare function startFaultServer(options?: FaultServerOptions): Promise<FaultServer>;
/** Complete RESP array commands off the front of `buf`, and the bytes they took. */
export declare function takeCommands(buf: Buffer): [Buffer[][], number];
