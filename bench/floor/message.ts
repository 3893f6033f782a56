// The email the floors send: rendered by the service's own template from a submission like the
// ones the benchmark posts, so that the baselines send messages of the same size.
import { randomUUID } from 'node:crypto';
import type { Submission } from '../../src/shared/submissions/entities.ts';
import { renderSubmissionEmail } from '../../src/workers/delivery/render-submission.ts';

export const BENCH_MESSAGE = 'Hello! I would like to know more about your product. '.repeat(8).trim();
export const BENCH_SENDER = 'visitor@example.test';
export const BENCH_OWNER = 'owner@example.test';
export const MAIL_FROM = 'Contact Form <forms@bench.test>';

export function sampleEmail(id = randomUUID()) {
  const submission = {
    id,
    email: BENCH_SENDER,
    message: BENCH_MESSAGE,
    subject: `New contact form submission from ${BENCH_SENDER}`,
    customFields: [
      ['name', 'Ada Lovelace'],
      ['company', 'Analytical Engines Ltd'],
    ],
    createdAt: new Date(),
  } as unknown as Submission;
  return renderSubmissionEmail(submission, []);
}
