// Reads of the submissions table for the HTTP adapters: a row by id, a row of an owner's, its key.
import type { EntityManager } from '@mikro-orm/postgresql';
import { SubmissionSchema, type Submission } from '../../db/entities.ts';

/** The submission with this id (a UUID), or null. */
export async function findSubmissionById(em: EntityManager, id: string): Promise<Submission | null> {
  return em.findOne(SubmissionSchema, id);
}

/** The submission with this id when its key's address is `email`; null otherwise (not the owner's, or no such row). */
export async function findSubmissionOfOwner(em: EntityManager, email: string, id: string): Promise<Submission | null> {
  return em.findOne(SubmissionSchema, { id, key: { email } });
}

/** Loads the submission's key row into `submission.key` (its fields beyond the id). */
export async function loadSubmissionKey(em: EntityManager, submission: Submission): Promise<void> {
  await em.populate(submission, ['key']);
}
