// The owner_spam_marks table: marks taught to the spam filter per owner mailbox, spam and ham.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { SpamMark } from '../../words/spam-kinds.ts';

/** One more mark of this kind taught for the mailbox's owner. */
export async function countTaughtMark(em: EntityManager, mailbox: string, mark: SpamMark): Promise<void> {
  const [spam, ham] = mark === 'spam' ? [1, 0] : [0, 1];
  await em.execute(
    `insert into owner_spam_marks (mailbox, spam, ham) values (?, ?, ?)
       on conflict (mailbox) do update set spam = owner_spam_marks.spam + excluded.spam, ham = owner_spam_marks.ham + excluded.ham`,
    [mailbox, spam, ham],
  );
}
