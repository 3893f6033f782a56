// The migration that adds spam campaign votes turns the owners' marks of the last 30 days into votes
// at once, with the fingerprints the service computes, so that an upgrade does not start from none.
import { describe, expect, it } from 'vitest';
import { campaignFingerprint } from '../../src/shared/spam/campaign-fingerprint.ts';
import { ormOnOwnDatabase } from '../support/migration-database.ts';

const { orm } = ormOnOwnDatabase({ migrated: false });

const PITCH = 'We build quality backlinks for your website and bring it to the first page of search results within weeks, call us today';

describe('spam campaign votes', () => {
  it("carries the last 30 days' marks as votes, each with its mailbox, mark, time and fingerprint", async () => {
    await orm().migrator.up({ to: 'Migration20261126220000_spam_teachings' });
    const em = orm().em.fork();
    await em.execute(`insert into verification_keys (id, key_hash, key_encrypted, email, mailbox) values
      ('00000000-0000-4000-8000-000000000001', '${'h'.repeat(64)}', 'sealed', 'a.b+forms@gmail.com', 'ab@gmail.com')`);
    const submission = (id: number, message: string, mark: string | null, daysAgo: number) =>
      `('00000000-0000-4000-8000-00000000010${id}', '00000000-0000-4000-8000-000000000001', 'visitor@example.org', '${message}', 'Hello',
        ${mark ? `'${mark}'` : 'null'}, ${mark ? `now() - make_interval(days => ${daysAgo})` : 'null'})`;
    await em.execute(`insert into submissions (id, key_id, email, message, subject, spam_mark, spam_marked_at) values
      ${submission(1, PITCH, 'spam', 2)}, ${submission(2, `${PITCH} again`, 'ham', 29)}, ${submission(3, `${PITCH} long ago`, 'spam', 31)},
      ${submission(4, 'Too short to tell', 'spam', 1)}, ${submission(5, `${PITCH} unmarked`, null, 0)}`);

    await orm().migrator.up();

    const votes = await em.execute<Array<{ submission_id: string; mailbox: string; mark: string; hashes: number[]; same_time: boolean }>>(
      `select v.submission_id, v.mailbox, v.mark, v.hashes, v.marked_at = s.spam_marked_at as same_time
         from spam_campaign_votes v join submissions s on s.id = v.submission_id order by v.submission_id`,
    );
    expect(votes.map(({ hashes, ...vote }) => vote)).toEqual([
      { submission_id: '00000000-0000-4000-8000-000000000101', mailbox: 'ab@gmail.com', mark: 'spam', same_time: true },
      { submission_id: '00000000-0000-4000-8000-000000000102', mailbox: 'ab@gmail.com', mark: 'ham', same_time: true },
    ]);
    expect(votes[0]!.hashes).toEqual(campaignFingerprint(PITCH)!.hashes);
  });
});
