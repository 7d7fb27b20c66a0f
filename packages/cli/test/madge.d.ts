/** The part of madge's API the module-cycle test uses: madge ships no types. */
declare module 'madge' {
  interface MadgeConfig {
    fileExtensions?: string[];
    tsConfig?: string;
    detectiveOptions?: Record<string, { skipTypeImports?: boolean; skipAsyncImports?: boolean }>;
  }
  interface MadgeResult {
    /** Each cycle as the files it passes through, relative to the folder given. */
    circular(): string[][];
  }
  export default function madge(path: string, config?: MadgeConfig): Promise<MadgeResult>;
}
