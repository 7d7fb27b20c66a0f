export declare function slotsReply(ranges: [number, number, number][]): string;
export interface ClusterFaultServer {
  port: number;
  asked(): number;
  commands(): number;
  close(): Promise<void>;
}
export declare function startClusterFaultServer(options: {
  slots: (port: number, asked: number) => string;
  reply?: (args: Buffer[], port: number) => string;
}): Promise<ClusterFaultServer>;
