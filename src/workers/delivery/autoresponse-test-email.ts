// The autoresponse test, a key email (kind `autoresponse-test`): the key's autoresponse as a visitor
// would receive it today (src/shared/autoresponses/render.ts, the same rendering), to the key's
// owner, "[Test] " before its subject. Sent as saved when it goes: emptied since, it is not sent.
import type { VerificationKey } from '../../shared/keys/entities.ts';
import { renderAutoresponse } from '../../shared/autoresponses/autoresponses.ts';
import type { RenderedEmail } from './email-templates.ts';
import { TEST_SUBJECT_PREFIX } from './render-submission.ts';
import { SuppressedError } from './send.ts';

/** The headers of an autoresponse, the test's too: RFC 3834, an automatic reply. */
export const AUTORESPONSE_TEST_HEADERS = { 'Auto-Submitted': 'auto-replied' };

export function renderAutoresponseTest(key: Pick<VerificationKey, 'autoresponseSubject' | 'autoresponseText' | 'label'>, receivedAt: Date): RenderedEmail {
  const { autoresponseSubject: subject, autoresponseText: text } = key;
  if (!subject || !text) throw new SuppressedError("not attempted: the key's autoresponse has no subject or no text any more");
  const email = renderAutoresponse({ subject, text, label: key.label ?? null, receivedAt });
  return { subject: `${TEST_SUBJECT_PREFIX}${email.subject}`, text: email.text, html: email.html };
}
