// The delivery baseline: a loop of pooled nodemailer sends, no queue and no database.

// COUNT messages, CONCURRENCY at a time through a pool of as many connections. With ATTACH_KEY, each
// message carries that S3 object, streamed from storage as the workers do. Starts on the parent's
// "go" so that several of these processes start together.
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { Readable } from 'node:stream';
import { createMailTransport } from '../../src/shared/infra/mail.ts';
import { BENCH_OWNER, BENCH_SENDER, MAIL_FROM, sampleEmail } from './message.ts';

const count = Number(process.env.COUNT);
const concurrency = Number(process.env.CONCURRENCY);
const attachKey = process.env.ATTACH_KEY;
const transport = createMailTransport(process.env.SMTP_URL!, concurrency);
const email = sampleEmail();
const s3 = attachKey
  ? new S3Client({
      region: 'us-east-1',
      endpoint: process.env.S3_ENDPOINT!,
      forcePathStyle: true,
      credentials: { accessKeyId: process.env.S3_ACCESS_KEY_ID!, secretAccessKey: process.env.S3_SECRET_ACCESS_KEY! },
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    })
  : undefined;

async function attachment() {
  if (!s3 || !attachKey) return [];
  const object = await s3.send(new GetObjectCommand({ Bucket: process.env.S3_BUCKET!, Key: attachKey }));
  return [{ filename: 'attachment.bin', contentType: 'application/octet-stream', content: object.Body as Readable }];
}

let next = 0;
let sent = 0;
let failed = 0;
let firstError: string | undefined;

async function loop() {
  while (next < count) {
    const n = next++;
    try {
      await transport.sendMail({
        from: MAIL_FROM,
        to: BENCH_OWNER,
        replyTo: BENCH_SENDER,
        subject: email.subject,
        text: email.text,
        html: email.html,
        attachments: await attachment(),
        messageId: `<baseline-${process.pid}-${n}@bench.test>`,
      });
      sent += 1;
    } catch (error) {
      failed += 1;
      firstError ??= String(error);
    }
  }
}

process.on('message', (message: { type: string }) => {
  if (message.type !== 'go') return;
  void Promise.all(Array.from({ length: concurrency }, loop)).then(() => {
    process.send?.({ type: 'done', sent, failed, firstError });
    transport.close();
    s3?.destroy();
  });
});
process.on('disconnect', () => process.exit(0));
process.on('SIGTERM', () => process.exit(0));
process.send?.({ type: 'ready' });
