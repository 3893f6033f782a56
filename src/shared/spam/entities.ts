// The spam feature's tables: the marks taught per owner, each teaching against a key's allowance,
// and the owners' marks as votes on campaigns.
import { randomUUID } from 'node:crypto';
import { defineEntity, p } from '@mikro-orm/core';
import { VerificationKeySchema } from '../keys/entities.ts';
import { SubmissionSchema } from '../submissions/entities.ts';
import { SPAM_MARKS } from '../words/spam-kinds.ts';

/**
 * The marks taught to the spam filter for each owner (mailbox), counted up only: a check reads the
 * owner's own statistics once both counts reach OWNER_MIN_LEARNS (./spam-filter.ts).
 */
export const OwnerSpamMarksSchema = defineEntity({
  name: 'OwnerSpamMarks',
  tableName: 'owner_spam_marks',
  properties: {
    mailbox: p.string().length(254).primary(),
    spam: p.integer().default(0),
    ham: p.integer().default(0),
  },
});

/**
 * Each time the filter was asked to learn a key's mark (or a place was reserved for it): the key's
 * hourly teaching allowance counts these, not the marks, so that reversing a taught mark, or
 * deleting its message, gives no place back. Only a teaching that failed gives its place back.
 */
export const SpamTeachingSchema = defineEntity({
  name: 'SpamTeaching',
  tableName: 'spam_teachings',
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => randomUUID()),
    key: () => p.manyToOne(VerificationKeySchema).deleteRule('cascade'),
    /** Null once the message is deleted: its teaching still counts. */
    submission: () => p.manyToOne(SubmissionSchema).nullable().deleteRule('set null').index(),
    mark: p.enum(SPAM_MARKS),
    taughtAt: p.datetime().defaultRaw('now()'),
  },
  indexes: [{ properties: ['key', 'taughtAt'], name: 'spam_teachings_key_taught_idx' }],
});

/**
 * An owner's mark as a vote on spam campaigns (src/shared/spam/spam-campaigns.ts): the fingerprint of the
 * marked message and the owner's mailbox, one row per marked submission, kept CAMPAIGN_VOTE_DAYS.
 * Not tied to the submission: deleting the message leaves the owner's word on its text standing.
 */
export const SpamCampaignVoteSchema = defineEntity({
  name: 'SpamCampaignVote',
  tableName: 'spam_campaign_votes',
  properties: {
    submissionId: p.uuid().primary(),
    mailbox: p.string().length(254),
    /** The mailbox's registrable domain (src/shared/spam/spam-campaigns.ts voteDomainOf): a campaign needs votes from several. */
    domain: p.string().length(254),
    mark: p.enum(SPAM_MARKS),
    /** The message's MinHash values, by position (src/shared/spam/campaign-fingerprint.ts). */
    hashes: p.array<number>().columnType('int4[]'),
    /** Its bands: what the index finds near-identical messages by. */
    bands: p.array<number>().columnType('int4[]'),
    markedAt: p.datetime().defaultRaw('now()'),
  },
  indexes: [
    // GIN, made without a pending list (fastupdate = off, in the migration): one query per email reads it.
    { properties: ['bands'], name: 'spam_campaign_votes_bands_idx', type: 'gin' },
    // Retention deletes the votes past their days.
    { properties: ['markedAt'], name: 'spam_campaign_votes_marked_idx' },
  ],
});
