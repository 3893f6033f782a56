// The migrations that moved hard bounces to the address and gave Gmail's spellings one mailbox
// carry the rows an installation already has: suppressions, complaints, consent and allowances.
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
