// Recipient consent per mailbox: the recipients table (confirmed, asked to confirm) and the
// mailbox_allowances table (submission emails to an unconfirmed mailbox per clock hour).
import type { EntityManager } from '@mikro-orm/postgresql';

/**
 * Takes one submission email from the mailbox's allowance for this clock hour. One atomic
 * statement: concurrent submissions cannot overshoot. False when the allowance is spent.
 */
export async function takeAllowance(em: EntityManager, mailbox: string, perHour: number): Promise<boolean> {
  const rows = await em.execute<Array<{ used: number }>>(
    `insert into mailbox_allowances (mailbox, window_start, used) values (?, date_trunc('hour', now()), 1)
     on conflict (mailbox, window_start) do update set used = mailbox_allowances.used + 1
       where mailbox_allowances.used < ?
     returning used`,
    [mailbox, perHour],
  );
  return rows.length > 0;
}

/**
 * Marks that the one "confirm to receive more" email of this mailbox is going out. True only the
 * first time, and never for a confirmed mailbox.
 */
export async function claimConfirmRequest(em: EntityManager, mailbox: string): Promise<boolean> {
  const rows = await em.execute<Array<{ mailbox: string }>>(
    `insert into recipients (mailbox, confirm_requested_at) values (?, now())
     on conflict (mailbox) do update set confirm_requested_at = now()
       where recipients.confirm_requested_at is null and recipients.confirmed_at is null
     returning mailbox`,
    [mailbox],
  );
  return rows.length > 0;
}

export async function isConfirmed(em: EntityManager, mailbox: string): Promise<boolean> {
  const [row] = await em.execute<Array<{ confirmed: boolean }>>('select confirmed_at is not null as confirmed from recipients where mailbox = ?', [mailbox]);
  return row?.confirmed ?? false;
}

/** Records the mailbox as confirmed; a confirmation already there keeps its time. */
export async function recordConfirmed(tx: EntityManager, mailbox: string): Promise<void> {
  await tx.execute(
    `insert into recipients (mailbox, confirmed_at) values (?, now())
     on conflict (mailbox) do update set confirmed_at = coalesce(recipients.confirmed_at, now())`,
    [mailbox],
  );
}

/** Housekeeping: the allowance counters of past hours. */
export async function deleteOldAllowances(em: EntityManager): Promise<void> {
  await em.execute(`delete from mailbox_allowances where window_start < now() - interval '1 day'`);
}
