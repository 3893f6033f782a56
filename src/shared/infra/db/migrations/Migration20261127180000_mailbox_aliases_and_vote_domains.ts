import { Migration } from '@mikro-orm/migrations';
import { getDomain } from 'tldts';

// The rules below are frozen copies of the service's as this migration brings them in
// (src/shared/keys/consent.ts mailboxOf, src/shared/spam/spam-campaigns.ts voteDomainOf,
// src/shared/spam/campaign-fingerprint.ts campaignWords and MIN_WORDS): a migration must do the same
// thing on every installation, whatever the service's rules become later.

/** The providers whose every spelling of a name reaches one inbox, added to Gmail's by this migration. */
const PROVIDERS: ReadonlyArray<{ domains: readonly [string, ...string[]]; local?: (local: string) => string }> = [
  { domains: ['yandex.ru', 'ya.ru', 'yandex.com', 'yandex.by', 'yandex.kz', 'yandex.ua', 'narod.ru'], local: (local) => local.replaceAll('.', '-') },
  { domains: ['proton.me', 'protonmail.com', 'protonmail.ch', 'pm.me'], local: (local) => local.replace(/[._-]/g, '') },
  { domains: ['icloud.com', 'me.com', 'mac.com'] },
];
const SUBDOMAIN_ADDRESSING = ['fastmail.com', 'fastmail.fm'];

/** A stored mailbox (already lower-cased, without its +tag) under the new rules. */
function canonicalMailbox(mailbox: string): string {
  const at = mailbox.lastIndexOf('@');
  if (at < 0) return mailbox;
  let local = mailbox.slice(0, at);
  let domain = mailbox.slice(at + 1);
  const addressed = SUBDOMAIN_ADDRESSING.find((base) => domain.endsWith(`.${base}`) && !domain.slice(0, -base.length - 1).includes('.'));
  if (addressed) {
    local = domain.slice(0, -addressed.length - 1);
    domain = addressed;
  }
  const provider = PROVIDERS.find(({ domains }) => domains.includes(domain));
  if (provider) {
    local = provider.local?.(local) ?? local;
    domain = provider.domains[0];
  }
  return `${local}@${domain}`;
}

const ONE_PROVIDER: ReadonlyMap<string, string> = new Map(['hotmail.com', 'live.com', 'msn.com'].map((domain) => [domain, 'outlook.com']));

/** The domain a mailbox votes from on spam campaigns. */
function voteDomainOf(mailbox: string): string {
  const host = mailbox.slice(mailbox.lastIndexOf('@') + 1);
  const domain = getDomain(host, { allowPrivateDomains: false }) ?? host;
  return ONE_PROVIDER.get(domain) ?? domain;
}

/** Fewer words than this: the text never votes on a campaign. */
const MIN_WORDS = 20;
const LINK = /\b(?:https?:\/\/|www\.)(?:[^\s/?#@]*@)?(?:www\.)?([^\s/?#:]+)\S*/giu;
const NUMBER = /(?<![\p{L}\p{N}])\+?\d(?:[\d\s().-]*\d)?(?![\p{L}\p{N}])/gu;

/** How many words a campaign fingerprint reads in a message. */
function campaignWordCount(message: string): number {
  return message
    .normalize('NFKC')
    .toLowerCase()
    .replace(LINK, (_link, host: string) => ` ${host.replace(/[^\p{L}\p{N}]+/gu, '')} `)
    .replace(NUMBER, ' 0 ')
    .replace(/\d/gu, '0')
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean).length;
}

/** The tables that name a mailbox. */
const MAILBOX_TABLES = ['verification_keys', 'key_emails', 'recipients', 'mailbox_complaints', 'mailbox_allowances', 'owner_spam_marks', 'spam_campaign_votes'];
/** The stored mailboxes the new rules may rename. */
const AFFECTED = String.raw`@(yandex\.(ru|com|by|kz|ua)|ya\.ru|narod\.ru|proton\.me|protonmail\.(com|ch)|pm\.me|icloud\.com|me\.com|mac\.com|[^@.]+\.fastmail\.(com|fm))$`;

/**
 * Spam campaigns that one person cannot make.
 *
 * 1. A mailbox is now also one inbox under each of Yandex's, Proton's and Apple's domains, and at
 *    Fastmail under subdomain addressing: the stored mailboxes are rewritten, and the per-mailbox
 *    rows of two spellings merged, as the migration that did this for Gmail did (consent kept if
 *    either had confirmed, allowances added up; an owner's spam marks under an old spelling dropped,
 *    since the filter keeps that owner's statistics under the mailbox's name and starts anew).
 * 2. Each campaign vote records its mailbox's registrable domain: a campaign needs votes from
 *    several.
 * 3. A text of fewer than 20 words no longer votes: the votes on such texts are deleted, and so are
 *    those whose message is gone, which cannot be measured (they would have expired within 30 days).
 */
export class Migration20261127180000_mailbox_aliases_and_vote_domains extends Migration {
  override name = 'Migration20261127180000_mailbox_aliases_and_vote_domains';

  override async up(): Promise<void> {
    // Run at once rather than queued with addSql: each step reads what the one before wrote.
    const stored = new Set<string>();
    for (const table of MAILBOX_TABLES) {
      const rows = (await this.execute(`select distinct "mailbox" from "${table}" where "mailbox" ~ ?`, [AFFECTED])) as Array<{ mailbox: string }>;
      for (const row of rows) stored.add(row.mailbox);
    }
    const renames = [...stored].map((old) => [old, canonicalMailbox(old)] as const).filter(([old, renamed]) => old !== renamed);
    await this.execute(`create temporary table "mailbox_renames" ("old" varchar(254) primary key, "new" varchar(254) not null)`);
    for (const [old, renamed] of renames) await this.execute(`insert into "mailbox_renames" ("old", "new") values (?, ?)`, [old, renamed]);

    for (const table of ['verification_keys', 'key_emails', 'spam_campaign_votes']) {
      await this.execute(`update "${table}" t set "mailbox" = r."new" from "mailbox_renames" r where t."mailbox" = r."old";`);
    }
    await this.execute(`insert into "recipients" ("mailbox", "confirmed_at", "confirm_requested_at", "created_at")
      select r."new", min(t."confirmed_at"), min(t."confirm_requested_at"), min(t."created_at") from "recipients" t join "mailbox_renames" r on r."old" = t."mailbox"
       group by 1
      on conflict ("mailbox") do update set "confirmed_at" = least("recipients"."confirmed_at", excluded."confirmed_at"),
        "confirm_requested_at" = least("recipients"."confirm_requested_at", excluded."confirm_requested_at");`);
    await this.execute(`insert into "mailbox_complaints" ("mailbox", "complained_at")
      select r."new", max(t."complained_at") from "mailbox_complaints" t join "mailbox_renames" r on r."old" = t."mailbox" group by 1
      on conflict ("mailbox") do update set "complained_at" = greatest("mailbox_complaints"."complained_at", excluded."complained_at");`);
    await this.execute(`insert into "mailbox_allowances" ("mailbox", "window_start", "used")
      select r."new", t."window_start", sum(t."used") from "mailbox_allowances" t join "mailbox_renames" r on r."old" = t."mailbox" group by 1, 2
      on conflict ("mailbox", "window_start") do update set "used" = "mailbox_allowances"."used" + excluded."used";`);
    for (const table of ['recipients', 'mailbox_complaints', 'mailbox_allowances', 'owner_spam_marks']) {
      await this.execute(`delete from "${table}" where "mailbox" in (select "old" from "mailbox_renames");`);
    }
    await this.execute(`drop table "mailbox_renames";`);

    await this.execute(`alter table "spam_campaign_votes" add column "domain" varchar(254) null;`);
    const voters = (await this.execute(`select distinct "mailbox" from "spam_campaign_votes"`)) as Array<{ mailbox: string }>;
    for (const { mailbox } of voters) {
      await this.execute(`update "spam_campaign_votes" set "domain" = ? where "mailbox" = ?`, [voteDomainOf(mailbox), mailbox]);
    }
    await this.execute(`alter table "spam_campaign_votes" alter column "domain" set not null;`);

    // In batches: a large installation holds about 100,000 votes.
    let after = '00000000-0000-0000-0000-000000000000';
    for (;;) {
      const votes = (await this.execute(
        `select v."submission_id" as "id", s."message" from "spam_campaign_votes" v left join "submissions" s on s."id" = v."submission_id"
          where v."submission_id" > ? order by v."submission_id" limit 1000`,
        [after],
      )) as Array<{ id: string; message: string | null }>;
      if (votes.length === 0) break;
      after = votes.at(-1)!.id;
      const short = votes.filter((vote) => vote.message === null || campaignWordCount(vote.message) < MIN_WORDS).map((vote) => vote.id);
      if (short.length) await this.execute(`delete from "spam_campaign_votes" where "submission_id" = any(?::uuid[])`, [`{${short.join(',')}}`]);
    }
  }

  override down(): void | Promise<void> {
    // The spellings merged and the votes deleted are not kept; the domain column can go.
    this.addSql(`alter table "spam_campaign_votes" drop column "domain";`);
  }
}
