// The files of a submission in its email: attached, streamed from storage, while their total
// stays within ATTACH_MAX_BYTES; past that each file becomes a presigned download link.
import type { Readable } from 'node:stream';
import type Mail from 'nodemailer/lib/mailer/index.js';
import type { Attachment } from '../../shared/submissions/entities.ts';
import { headerText } from '../../shared/infra/display-text.ts';
import type { Storage } from '../../shared/infra/storage.ts';

export type FileInEmail = { file: Attachment; link?: string };

export type EmailFiles = {
  listed: FileInEmail[];
  attachments: Mail.Attachment[];
  /** Closes the storage streams that a failed send left open. */
  release: () => void;
};

export async function prepareFiles(files: Attachment[], storage: Storage, options: { attachMaxBytes: number; linkTtlSeconds: number }): Promise<EmailFiles> {
  const total = files.reduce((sum, file) => sum + file.size, 0);
  if (total <= options.attachMaxBytes) {
    const streams: Readable[] = [];
    const attachments: Mail.Attachment[] = [];
    try {
      for (const file of files) {
        const stream = await storage.download(file.storageKey);
        streams.push(stream);
        // A header: its encoded words decoded and made safe, as the owner's client would show them.
        attachments.push({ filename: headerText(file.filename), contentType: file.contentType, content: stream });
      }
    } catch (error) {
      for (const stream of streams) stream.destroy();
      throw error;
    }
    return {
      listed: files.map((file) => ({ file })),
      attachments,
      release: () => streams.forEach((stream) => stream.destroy()),
    };
  }
  const listed = await Promise.all(
    files.map(async (file) => ({
      file,
      link: await storage.presign(file.storageKey, headerText(file.filename), options.linkTtlSeconds, file.contentType),
    })),
  );
  return { listed, attachments: [], release: () => undefined };
}
