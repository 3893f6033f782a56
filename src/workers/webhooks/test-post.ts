// A test post: a sample message, marked as a test, sent at once to one endpoint the way a delivery
// is (the platform's format for a chat channel, the signed `submission.created` body for a
// webhook; the address guard, the time limit), and its outcome returned. Nothing is stored or
// counted: no submission, no delivery row, no failure against the endpoint, no metric.
import { randomUUID } from 'node:crypto';
import { deliveryKinds } from '../../shared/deliveries/delivery-kinds.ts';
import type { AddressPolicy } from '../../shared/webhooks/address-guard.ts';
import { isChatKind } from '../../shared/webhooks/chat-channels.ts';
import { judgeWebhookAnswer } from '../../shared/webhooks/delivery-policy.ts';
import type { EndpointKind } from '../../shared/webhooks/endpoint-kinds.ts';
import { chatNotice } from './chat/chat-notice.ts';
import { chatRequest } from './chat/chat-request.ts';
import { postWebhook, signedHeaders } from './webhook-http.ts';
import type { SubmissionCreated } from './webhook-payload.ts';

export type TestPostTarget = { kind: EndpointKind; url: string; chatId: string | null; secret: string };
export type TestPostKey = { id: string; label?: string | null; emailFieldOrder: string[]; emailHiddenFields: string[] };
export type TestPostSettings = { timeoutMs: number; policy: AddressPolicy; publicUrl: string; telegramApiUrl: string };
export type TestPostOutcome = { delivered: boolean; detail: string };

/** The sample message: plainly made-up values, so no one mistakes it for a visitor's. */
function sample(key: TestPostKey) {
  return {
    id: randomUUID(),
    email: 'sample.sender@example.com',
    subject: 'Test post from your contact form',
    message: 'This is a test post sent from the owner console. The sender, the subject and this text are sample values; no visitor wrote them.',
    customFields: [['name', 'Sample Sender']] as Array<[string, string]>,
    spamVerdict: null,
    spamScore: null,
    spamMark: null,
    createdAt: new Date(),
    test: true,
    key: { label: key.label ?? null, emailFieldOrder: key.emailFieldOrder, emailHiddenFields: key.emailHiddenFields },
  };
}

function testRequest(target: TestPostTarget, key: TestPostKey, settings: TestPostSettings): { url: string; body: string; headers: Record<string, string> } {
  const message = sample(key);
  if (isChatKind(target.kind)) {
    // The sample has no page of its own: the link goes to the page the post was sent from.
    const notice = { ...chatNotice(message, [], settings.publicUrl), consoleUrl: `${settings.publicUrl}/owner/keys/${key.id}/webhooks` };
    return { ...chatRequest({ kind: target.kind, chatId: target.chatId }, target.secret, notice, settings.telegramApiUrl), headers: {} };
  }
  const payload: SubmissionCreated = {
    type: 'submission.created',
    timestamp: new Date().toISOString(),
    data: {
      id: message.id,
      created_at: message.createdAt.toISOString(),
      email: message.email,
      subject: message.subject,
      message: message.message,
      fields: message.customFields.map(([name, value]) => ({ name, value })),
      files: [],
      spam: null,
      test: true,
    },
  };
  const body = JSON.stringify(payload);
  return { url: target.url, body, headers: signedHeaders(target.secret, `${deliveryKinds.webhook.messageIdPrefix}test_${message.id}`, body) };
}

/** Sends the test post; the outcome in words: "HTTP 200", or why it failed (the answer, a refused address, no answer in time). */
export async function sendTestPost(target: TestPostTarget, key: TestPostKey, settings: TestPostSettings): Promise<TestPostOutcome> {
  try {
    const request = testRequest(target, key, settings);
    const answer = await postWebhook(request.url, request.body, request.headers, { timeoutMs: settings.timeoutMs, policy: settings.policy });
    if (answer.status >= 200 && answer.status < 300) return { delivered: true, detail: `HTTP ${answer.status}` };
    return { delivered: false, detail: judgeWebhookAnswer(answer).reason };
  } catch (error) {
    return { delivered: false, detail: String((error as { message?: unknown }).message ?? error).slice(0, 500) };
  }
}
