// The notifications of key and consent changes: a trigger NOTIFYs this channel at the commit of
// every such change (migration key_changes), and the API's key cache listens on it.
import type pg from 'pg';

export const KEY_CHANGES_CHANNEL = 'cfs_key_changes';

/** Subscribes the connection to the key change notifications (its `notification` events). */
export async function listenForKeyChanges(connection: pg.Client): Promise<void> {
  await connection.query(`listen ${KEY_CHANGES_CHANNEL}`);
}
