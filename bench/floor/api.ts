// The floor of the intake design, run as its own process: a bare Koa handler on the same
// PostgreSQL, Redis and S3 that does what every accepted submission must cost at least.

//   POST /json       parse → one INSERT (pg) → one queue.add (BullMQ) → 200
//   POST /json-pk    the same into the table FLOOR_PK_TABLE names, whose only index is its primary key (no secondary
//                    index, trigger or foreign key): with /json, what the schema costs per row
//   POST /multipart  the same, plus one S3 PutObject per file (busboy, each file read into memory)
// No rate limit, no validation, no key lookup, no transaction, no ORM.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import busboy from 'busboy';
import Koa from 'koa';
import pg from 'pg';
import { createDeliveryQueue, enqueueDelivery } from '../../src/shared/infra/queues/queues.ts';
import { createRedis } from '../../src/shared/infra/queues/redis.ts';
import { submissionJob, type DeliveryJob } from '../../src/shared/deliveries/delivery-jobs.ts';

const env = (name: string) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};

const keyId = env('FLOOR_KEY_ID');
const pool = new pg.Pool({ connectionString: env('DATABASE_URL'), max: Number(process.env.FLOOR_POOL ?? '20') });
const redis = createRedis(env('REDIS_URL'), 'producer');
const queue = createDeliveryQueue<DeliveryJob>(redis, { QUEUE_PREFIX: env('QUEUE_PREFIX') });
const bucket = env('S3_BUCKET');
const s3 = new S3Client({
  region: 'us-east-1',
  endpoint: env('S3_ENDPOINT'),
  forcePathStyle: true,
  credentials: { accessKeyId: env('S3_ACCESS_KEY_ID'), secretAccessKey: env('S3_SECRET_ACCESS_KEY') },
  requestChecksumCalculation: 'WHEN_REQUIRED',
  responseChecksumValidation: 'WHEN_REQUIRED',
});

const INSERT = `insert into submissions (id, key_id, email, message, subject, custom_fields, client_ip, origin)
                values ($1, $2, $3, $4, $5, $6, $7, null)`;

/** Made by the benchmark (bench/support/context.ts) with the submission columns and nothing else. */
const INSERT_PK_ONLY = INSERT.replace('insert into submissions', `insert into ${env('FLOOR_PK_TABLE')}`);

async function store(fields: Record<string, string>, clientIp: string, insert = INSERT): Promise<string> {
  const id = randomUUID();
  const email = fields.email ?? '';
  await pool.query(insert, [id, keyId, email, fields.message ?? '', fields.subject ?? `New contact form submission from ${email}`, '[]', clientIp]);
  await enqueueDelivery(queue, submissionJob(id));
  return id;
}

function readAll(req: NodeJS.ReadableStream): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function readMultipart(ctx: Koa.Context, id: string): Promise<{ fields: Record<string, string>; files: number }> {
  return new Promise((resolve, reject) => {
    const fields: Record<string, string> = {};
    const puts: Array<Promise<unknown>> = [];
    const parser = busboy({ headers: ctx.req.headers });
    parser.on('field', (name, value) => {
      fields[name] = value;
    });
    parser.on('file', (_name, stream, info) => {
      const key = `floor/${id}/${puts.length + 1}-${info.filename}`;
      puts.push(
        readAll(stream).then((body) =>
          s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ContentLength: body.length, ContentType: info.mimeType })),
        ),
      );
    });
    parser.on('error', reject);
    parser.on('close', () => {
      Promise.all(puts).then(() => resolve({ fields, files: puts.length }), reject);
    });
    ctx.req.pipe(parser);
  });
}

const app = new Koa();
app.use(async (ctx) => {
  if (ctx.method !== 'POST') {
    ctx.status = 404;
    return;
  }
  const clientIp = ctx.req.socket.remoteAddress ?? '';
  if (ctx.path === '/json' || ctx.path === '/json-pk') {
    const fields = JSON.parse((await readAll(ctx.req)).toString()) as Record<string, string>;
    const id = await store(fields, clientIp, ctx.path === '/json' ? INSERT : INSERT_PK_ONLY);
    ctx.body = { success: true, submission_id: id, attachments: 0 };
    return;
  }
  if (ctx.path === '/multipart') {
    const { fields, files } = await readMultipart(ctx, randomUUID());
    const id = await store(fields, clientIp);
    ctx.body = { success: true, submission_id: id, attachments: files };
    return;
  }
  ctx.status = 404;
});

// Koa's handler catches its own errors: the promise it returns never rejects.
const handleRequest = app.callback();
const server = createServer((req, res) => void handleRequest(req, res));
server.keepAliveTimeout = 65_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`floor listening ${(server.address() as AddressInfo).port}\n`);
});
process.on('SIGTERM', () => {
  server.close();
  server.closeIdleConnections();
  void Promise.allSettled([queue.close(), pool.end()]).then(() => {
    redis.disconnect();
    s3.destroy();
    process.exit(0);
  });
});
