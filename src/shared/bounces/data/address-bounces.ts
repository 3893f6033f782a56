// The address_bounces table: hard bounces per address, exactly as mailed, since its owner last
// signed in, and the suppression they set.
import type { EntityManager } from '@mikro-orm/postgresql';
import type pg from 'pg';

/** One more hard bounce for the address; at `afterHardBounces` (and for each one past it) suppressed for `forHours` from now. */
export async function countHardBounce(client: pg.PoolClient, address: string, policy: { afterHardBounces: number; forHours: number }): Promise<void> {
  await client.query(
    `insert into address_bounces as b (address, hard_bounces, last_bounced_at, suppressed_until)
     values ($1, 1, now(), case when 1 >= $2 then now() + make_interval(hours => $3) end)
     on conflict (address) do update
        set hard_bounces = b.hard_bounces + 1, last_bounced_at = now(),
            suppressed_until = case when b.hard_bounces + 1 >= $2 then now() + make_interval(hours => $3) else b.suppressed_until end`,
    [address, policy.afterHardBounces, policy.forHours],
  );
}

/** The address's bounces are forgotten, and its suppression with them. */
export async function forgetBounces(tx: EntityManager, address: string): Promise<void> {
  await tx.execute('delete from address_bounces where address = ?', [address]);
}
