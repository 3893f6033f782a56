// s3rver in its own process, so that storage work is not counted against the load generator.
import { startS3 } from '../../src/local/services.ts';

const service = await startS3({ dir: process.env.S3_DIR!, bucket: process.env.S3_BUCKET! });
process.send?.({ type: 'ready', url: service.url });
const stop = () => void service.stop().finally(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('disconnect', stop);
