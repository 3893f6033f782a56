// The migrations that moved hard bounces to the address and gave the spellings of one inbox (Gmail's,
// then Yandex's, Proton's, Apple's and Fastmail's) one mailbox carry the rows an installation already
// has: suppressions, complaints, consent, allowances and campaign votes.
import { describe, expect, it } from 'vitest';
import { ormOnOwnDatabase } from '../support/migration-database.ts';

const { orm } = ormOnOwnDatabase({ migrated: false });

describe('address bounces and canonical mailboxes', () => {
  it('keeps suppressions and complaints, and merges the rows of every spelling of a Gmail inbox', async () => {
    await orm().migrator.up({ to: 'Migration20261126100000_complaints' });
    const em = orm().em.fork();
    const key = (n: number, email: string) => `(gen_random_uuid(), '${'h'.repeat(63)}${n}', 'sealed', '${email}', '${email.replace(/\+[^@]*@/, '@')}')`;
    await em.execute(`insert into verification_keys (id, key_hash, key_encrypted, email, mailbox) values
      ${key(1, 'e.rin@gmail.com')}, ${key(2, 'erin+forms@googlemail.com')}, ${key(3, 'bounced@example.test')}, ${key(4, 'd.ots@example.test')}`);
    await em.execute(`insert into recipients (mailbox, confirmed_at, confirm_requested_at) values
      ('e.rin@gmail.com', null, '2026-11-01'), ('erin@googlemail.com', '2026-11-02', null), ('d.ots@example.test', '2026-11-03', null)`);
    await em.execute(`insert into mailbox_bounces (mailbox, hard_bounces, last_bounced_at, suppressed_until, complained_at) values
      ('bounced@example.test', 3, now(), now() + interval '1 day', null),
      ('e.rin@gmail.com', 0, null, null, '2026-11-04'),
      ('d.ots@example.test', 1, now(), null, '2026-11-05')`);
    await em.execute(`insert into mailbox_allowances (mailbox, window_start, used) values
      ('e.rin@gmail.com', date_trunc('hour', now()), 3), ('erin@googlemail.com', date_trunc('hour', now()), 4)`);
    await em.execute(`insert into owner_spam_marks (mailbox, spam, ham) values ('e.rin@gmail.com', 10, 10), ('d.ots@example.test', 5, 5)`);

    await orm().migrator.up();

    expect(await em.execute('select email, mailbox from verification_keys order by email')).toEqual([
      { email: 'bounced@example.test', mailbox: 'bounced@example.test' },
      { email: 'd.ots@example.test', mailbox: 'd.ots@example.test' },
      { email: 'e.rin@gmail.com', mailbox: 'erin@gmail.com' },
      { email: 'erin+forms@googlemail.com', mailbox: 'erin@gmail.com' },
    ]);
    const recipients = await em.execute<Array<{ mailbox: string; confirmed: boolean; asked: boolean }>>(
      'select mailbox, confirmed_at is not null as confirmed, confirm_requested_at is not null as asked from recipients order by mailbox',
    );
    expect(recipients).toEqual([
      { mailbox: 'd.ots@example.test', confirmed: true, asked: false },
      { mailbox: 'erin@gmail.com', confirmed: true, asked: true },
    ]);
    expect(await em.execute('select address, hard_bounces from address_bounces order by address')).toEqual([
      { address: 'bounced@example.test', hard_bounces: 3 },
      { address: 'd.ots@example.test', hard_bounces: 1 },
    ]);
    expect(await em.execute('select mailbox from mailbox_complaints order by mailbox')).toEqual([
      { mailbox: 'd.ots@example.test' },
      { mailbox: 'erin@gmail.com' },
    ]);
    expect(await em.execute('select mailbox, used from mailbox_allowances')).toEqual([{ mailbox: 'erin@gmail.com', used: 7 }]);
    // The filter keeps an owner's statistics under the mailbox's name: a renamed one starts anew.
    expect(await em.execute('select mailbox from owner_spam_marks')).toEqual([{ mailbox: 'd.ots@example.test' }]);
  });
});

describe('mailbox aliases and the domains of campaign votes', () => {
  const { orm } = ormOnOwnDatabase({ migrated: false });

  it('merges the rows of every spelling of a Yandex, Proton, Apple or Fastmail inbox, gives each vote its domain, and drops the votes of short texts', async () => {
    await orm().migrator.up({ to: 'Migration20261127100000_key_labels_and_search' });
    const em = orm().em.fork();
    const key = (n: number, email: string) => `('${n}0000000-0000-4000-8000-000000000000'::uuid, '${'k'.repeat(63)}${n}', 'sealed', '${email}', '${email}')`;
    await em.execute(`insert into verification_keys (id, key_hash, key_encrypted, email, mailbox) values
      ${key(1, 'x@yandex.ru')}, ${key(2, 'x@ya.ru')}, ${key(3, 'i.van@yandex.com')}, ${key(4, 'al.ice@pm.me')},
      ${key(5, 'pat@me.com')}, ${key(6, 'shop@jo.fastmail.com')}, ${key(7, 'sam@hotmail.com')}, ${key(8, 'a@sales.shop.example.co.uk')}`);
    await em.execute(`insert into recipients (mailbox, confirmed_at, confirm_requested_at) values
      ('x@yandex.ru', null, '2026-11-01'), ('x@ya.ru', '2026-11-02', null), ('sam@hotmail.com', '2026-11-03', null)`);
    await em.execute(`insert into mailbox_allowances (mailbox, window_start, used) values
      ('x@yandex.ru', date_trunc('hour', now()), 2), ('x@yandex.com', date_trunc('hour', now()), 3)`);
    await em.execute(`insert into mailbox_complaints (mailbox, complained_at) values ('pat@me.com', '2026-11-04')`);
    await em.execute(`insert into owner_spam_marks (mailbox, spam, ham) values ('x@ya.ru', 10, 10), ('sam@hotmail.com', 5, 5)`);
    const long = Array.from({ length: 25 }, (_, n) => `word${String.fromCharCode(97 + n)}`).join(' ');
    const submission = (n: number, keyN: number, message: string) =>
      `('${n}1111111-0000-4000-8000-000000000000'::uuid, '${keyN}0000000-0000-4000-8000-000000000000'::uuid, 'v@example.org', 'Hi', '${message}', 'spam', now())`;
    await em.execute(`insert into submissions (id, key_id, email, subject, message, spam_mark, spam_marked_at) values
      ${submission(1, 1, long)}, ${submission(2, 2, long)}, ${submission(3, 7, long)}, ${submission(4, 8, long)},
      ${submission(5, 5, 'Hi, I would like a quote for my kitchen')}`);
    const vote = (n: number, mailbox: string) => `('${n}1111111-0000-4000-8000-000000000000'::uuid, '${mailbox}', 'spam', '{1}', '{1}')`;
    // Vote 6's message is gone: its length cannot be told.
    await em.execute(`insert into spam_campaign_votes (submission_id, mailbox, mark, hashes, bands) values
      ${vote(1, 'x@yandex.ru')}, ${vote(2, 'x@ya.ru')}, ${vote(3, 'sam@hotmail.com')}, ${vote(4, 'a@sales.shop.example.co.uk')},
      ${vote(5, 'pat@me.com')}, ${vote(6, 'shop@jo.fastmail.com')}`);

    await orm().migrator.up();

    expect(await em.execute('select email, mailbox from verification_keys order by email')).toEqual([
      { email: 'a@sales.shop.example.co.uk', mailbox: 'a@sales.shop.example.co.uk' },
      { email: 'al.ice@pm.me', mailbox: 'alice@proton.me' },
      { email: 'i.van@yandex.com', mailbox: 'i-van@yandex.ru' },
      { email: 'pat@me.com', mailbox: 'pat@icloud.com' },
      { email: 'sam@hotmail.com', mailbox: 'sam@hotmail.com' },
      { email: 'shop@jo.fastmail.com', mailbox: 'jo@fastmail.com' },
      { email: 'x@ya.ru', mailbox: 'x@yandex.ru' },
      { email: 'x@yandex.ru', mailbox: 'x@yandex.ru' },
    ]);
    expect(
      await em.execute('select mailbox, confirmed_at is not null as confirmed, confirm_requested_at is not null as asked from recipients order by mailbox'),
    ).toEqual([
      { mailbox: 'sam@hotmail.com', confirmed: true, asked: false },
      { mailbox: 'x@yandex.ru', confirmed: true, asked: true },
    ]);
    expect(await em.execute('select mailbox, used from mailbox_allowances')).toEqual([{ mailbox: 'x@yandex.ru', used: 5 }]);
    expect(await em.execute('select mailbox from mailbox_complaints')).toEqual([{ mailbox: 'pat@icloud.com' }]);
    expect(await em.execute('select mailbox from owner_spam_marks')).toEqual([{ mailbox: 'sam@hotmail.com' }]);
    // The two Yandex spellings are one mailbox now; the short text's vote and the one whose message is gone are dropped.
    expect(await em.execute('select mailbox, domain from spam_campaign_votes order by submission_id')).toEqual([
      { mailbox: 'x@yandex.ru', domain: 'yandex.ru' },
      { mailbox: 'x@yandex.ru', domain: 'yandex.ru' },
      { mailbox: 'sam@hotmail.com', domain: 'outlook.com' },
      { mailbox: 'a@sales.shop.example.co.uk', domain: 'example.co.uk' },
    ]);
  });
});
