// s3rver ships no types; only what src/local/services.ts uses is declared.
declare module 's3rver' {
  type BucketConfig = { name: string; configs: Array<string | Buffer> };
  type S3rverOptions = {
    address?: string;
    port?: number;
    directory: string;
    silent?: boolean;
    resetOnClose?: boolean;
    configureBuckets?: BucketConfig[];
  };
  export default class S3rver {
    constructor(options: S3rverOptions);
    run(): Promise<{ address: string; port: number }>;
    close(): Promise<void>;
  }
}
