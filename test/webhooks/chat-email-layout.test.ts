// A chat post shows a message's fields as the owner's email does: the key's email layout puts its
// ordered fields first and leaves its hidden ones out (test/support/chat-stand-ins.ts stands in for
// Slack and Discord on loopback).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminRequest, submitJson } from '../support/client.ts';
import { eventually, startHarness, type Harness } from '../support/harness.ts';
import { slackUnescape, withoutWordJoiners } from '../support/chat-schemas.ts';
import { startChatStandIn, type ChatPlatform, type ChatStandIn } from '../support/chat-stand-ins.ts';

const TOKEN = 'test-admin-token-0123456789';
const HOST = '127.0.0.6';
const PLATFORMS = ['slack', 'discord'] as const satisfies ChatPlatform[];

let h: Harness;
const standIns = {} as Record<(typeof PLATFORMS)[number], ChatStandIn>;

beforeAll(async () => {
  for (const platform of PLATFORMS) standIns[platform] = await startChatStandIn(platform, HOST);
  h = await startHarness({ env: { ADMIN_TOKEN: TOKEN, WEBHOOK_ALLOW: HOST } });
  for (const platform of PLATFORMS) standIns[platform].publicUrl = h.config.PUBLIC_URL;
});
afterAll(async () => {
  for (const standIn of Object.values(standIns)) await standIn.close();
  await h?.stop();
});

/** The field names a post shows, in its order: Slack's `name: value` section fields, Discord's embed fields. */
function fieldNames(platform: ChatPlatform, body: any): string[] {
  if (platform === 'slack') {
    const section = (body.blocks as any[]).find((block) => Array.isArray(block.fields));
    return (section?.fields ?? []).map((field: { text: string }) => withoutWordJoiners(slackUnescape(field.text)).split(': ')[0]);
  }
  return (body.embeds[0].fields ?? []).map((field: { name: string }) => field.name.replace(/\\([^\sA-Za-z0-9])/g, '$1'));
}

describe('chat posts follow the email layout', () => {
  it("shows the fields in the key's order and leaves its hidden fields out, on Slack and on Discord", async () => {
    const admin = (method: string, path: string, body?: unknown) => adminRequest(h, TOKEN, method, path, body);
    const key = await h.createKey();
    const layout = await admin('PATCH', `/admin/keys/${key.key}`, { email_field_order: ['phone', 'company'], email_hidden_fields: ['utm_source'] });
    expect(layout.status, layout.text).toBe(200);
    for (const platform of PLATFORMS) {
      const added = await admin('POST', `/admin/keys/${key.key}/webhooks`, { kind: platform, url: standIns[platform].url });
      expect(added.status, added.text).toBe(201);
    }
    const sent = await submitJson(h, {
      access_key: key.key,
      email: 'ana@example.org',
      subject: 'A quote',
      message: 'Hello',
      name: 'Ana',
      company: 'Shop',
      utm_source: 'newsletter-campaign',
      phone: '+1 555 0100',
    });
    expect(sent.status, sent.text).toBe(200);
    for (const platform of PLATFORMS) {
      const standIn = standIns[platform];
      const call = await eventually(async () => standIn.calls.find((entry) => JSON.stringify(entry.body).includes('Hello')), 30_000, `the ${platform} post`);
      expect(call.problems).toEqual([]);
      expect(fieldNames(platform, call.body), platform).toEqual(['phone', 'company', 'name']);
      expect(JSON.stringify(call.body), platform).not.toMatch(/utm.{0,4}source|newsletter/);
    }
  });
});
