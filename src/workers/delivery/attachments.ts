// The files of a submission in its email: attached, streamed from storage, while their total
// stays within ATTACH_MAX_BYTES; past that each file becomes a presigned download link. The virus
// scan (src/shared/files) decides first: an infected file is withheld (named, with its signature,
// never attached or linked); one unscanned or too large to scan is linked, never attached.
import type { Readable } from 'node:stream';
import type Mail from 'nodemailer/lib/mailer/index.js';
import type { Attachment } from '../../shared/submissions/entities.ts';
import { headerText } from '../../shared/infra/display-text.ts';
import type { Storage } from '../../shared/infra/storage.ts';
import { fileHandling, scanNote } from '../../shared/files/files.ts';

/** `note`: what the scan found, when the owner must be told (withheld, not scanned). `scanLinked`: a link because of the scan, not the size. */
export type FileInEmail = { file: Attachment; link?: string; note?: string; scanLinked?: boolean };

export type EmailFiles = {
  listed: FileInEmail[];
  attachments: Mail.Attachment[];
  /** Closes the storage streams that a failed send left open. */
  release: () => void;
};

export async function prepareFiles(files: Attachment[], storage: Storage, options: { attachMaxBytes: number; linkTtlSeconds: number }): Promise<EmailFiles> {
  const attachable = files.filter((file) => fileHandling(file) === 'deliver');
  const total = attachable.reduce((sum, file) => sum + file.size, 0);
  const attachAll = total <= options.attachMaxBytes;
  const streams: Readable[] = [];
  const attachments: Mail.Attachment[] = [];
  const listed: FileInEmail[] = [];
  try {
    for (const file of files) {
      const handling = fileHandling(file);
      const note = scanNote(file);
      const entry: FileInEmail = { file, ...(note ? { note } : {}) };
      if (handling === 'withhold') {
        listed.push(entry);
      } else if (handling === 'deliver' && attachAll) {
        const stream = await storage.download(file.storageKey);
        streams.push(stream);
        // A header: its encoded words decoded and made safe, as the owner's client would show them.
        attachments.push({ filename: headerText(file.filename), contentType: file.contentType, content: stream });
        listed.push(entry);
      } else {
        const link = await storage.presign(file.storageKey, headerText(file.filename), options.linkTtlSeconds, file.contentType);
        listed.push({ ...entry, link, scanLinked: handling === 'link' });
      }
    }
  } catch (error) {
    for (const stream of streams) stream.destroy();
    throw error;
  }
  return { listed, attachments, release: () => streams.forEach((stream) => stream.destroy()) };
}
