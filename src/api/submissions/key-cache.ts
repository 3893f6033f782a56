// The keys that authenticate submissions, kept in memory so a busy form costs no PostgreSQL round
// trip per request (npm run bench). A change can never go unnoticed for long:
//  - every change to a key or a recipient's consent, whoever makes it (API, CLI, owner console,
//    psql), fires a trigger that NOTIFYs `cfs_key_changes` at commit (migration key_changes); each
//    API process LISTENs on a connection of its own and forgets every cached key when told;
//  - while that connection is down, nothing is cached (every request reads PostgreSQL), and the
//    cache is emptied when it comes back (a notification may have been missed meanwhile);
//  - an entry is read again after KEY_CACHE_TTL_MS at the latest, should a notification be lost
//    on a connection that looks alive.
// The process that makes a change forgets its cache itself before answering (forgetAll), so its
// own next request never races the notification.
// A value that matches no key at all (a mistyped or random one) is remembered as unknown for a
// moment, apart from the keys and in bounded numbers, so that a flood of them costs PostgreSQL one
// read per value and not one per request, and cannot push the busy keys out. New keys are random,
// so no one asked for one before it existed; one added with a chosen value (psql, a script) is
// found UNKNOWN_TTL_MS later at the latest. A disabled or deleted key is read every time: enabled
// again, it works at once.
import type { EntityManager } from '@mikro-orm/postgresql';
import pg from 'pg';
import { PG_KEEPALIVE } from '../../shared/infra/db/pg-pool.ts';
import { lookUpKey, type ActiveKey, listenForKeyChanges } from '../../shared/keys/keys.ts';
import type { Logger } from '../../shared/infra/log.ts';
import type { KeyVault } from '../../shared/infra/secrets.ts';
import { API_PG_WAITS } from '../unavailable.ts';
import { ACCESS_KEY_MAX_LENGTH } from './input.ts';

/** Past this many keys the cache starts afresh: a bound on memory, far above a fleet's busy keys. */
const MAX_ENTRIES = 10_000;
/**
 * Unknown values: each remembered for 5 s (KEY_CACHE_TTL_MS when shorter), at most 10,000 of them
 * (the oldest forgotten first): about 2 MB, a value being at most ACCESS_KEY_MAX_LENGTH characters.
 */
const UNKNOWN_TTL_MS = 5_000;
const MAX_UNKNOWN = 10_000;
const RECONNECT_MS = 1_000;

export type KeyCache = {
  /**
   * The active key with this value, as lookUpKey gives it, from memory when fresh; null for any
   * other value, and at once for one longer than an access_key may be. `em` is asked for only when
   * PostgreSQL is.
   */
  find: (em: () => EntityManager, key: string) => Promise<ActiveKey | null>;
  /**
   * Forgets every cached key at once: called by this process after a change it made itself, so its
   * next request sees it without waiting for the notification (which tells the other processes).
   */
  forgetAll: () => void;
  close: () => Promise<void>;
};

type Entry = { key: Promise<ActiveKey | 'inactive' | null>; expiresAt: number };

const activeOnly = (key: ActiveKey | 'inactive' | null) => (key === 'inactive' ? null : key);

export function createKeyCache(options: { databaseUrl: string; ttlMs: number; vault: KeyVault; log: Logger }): KeyCache {
  const { databaseUrl, ttlMs, vault, log } = options;
  const entries = new Map<string, Entry>();
  /** Values that matched no key, each with the time it is read again from (in insertion order, so the oldest first). */
  const unknown = new Map<string, number>();
  const unknownTtlMs = Math.min(ttlMs, UNKNOWN_TTL_MS);
  let listening = false;
  let closed = false;
  let client: pg.Client | undefined;
  let retry: NodeJS.Timeout | undefined;

  const forgetAll = () => {
    entries.clear();
    unknown.clear();
  };

  function rememberUnknown(key: string, expiresAt: number): void {
    unknown.delete(key);
    if (unknown.size >= MAX_UNKNOWN) unknown.delete(unknown.keys().next().value!);
    unknown.set(key, expiresAt);
  }

  async function listen(): Promise<void> {
    // Idle by nature: keepalive notices a server that is gone, and the connection is made again.
    const connection = new pg.Client({ connectionString: databaseUrl, ...PG_KEEPALIVE, connectionTimeoutMillis: API_PG_WAITS.connectMs });
    client = connection;
    connection.on('notification', forgetAll);
    connection.on('error', (error) => lost(connection, error));
    connection.on('end', () => lost(connection, undefined));
    try {
      await connection.connect();
      await listenForKeyChanges(connection);
      if (client !== connection || closed) return;
      forgetAll();
      listening = true;
    } catch (error) {
      lost(connection, error);
    }
  }

  function lost(connection: pg.Client, error: unknown): void {
    if (client !== connection) return;
    listening = false;
    client = undefined;
    forgetAll();
    connection.end().catch(() => undefined);
    if (closed) return;
    log.warn({ err: error }, 'key change notifications lost: keys are read from PostgreSQL until they are back');
    retry = setTimeout(() => void listen(), RECONNECT_MS);
  }

  void listen();

  return {
    async find(em, key) {
      // No submission can carry it (input.ts): no key to look for, and nothing to remember.
      if (key.length > ACCESS_KEY_MAX_LENGTH) return null;
      if (!listening || ttlMs === 0) return activeOnly(await lookUpKey(em(), vault, key));
      // Indexed by the key's value itself: its HMAC (how PostgreSQL finds it) costs more CPU than the lookup here.
      const now = Date.now();
      const cached = entries.get(key);
      if (cached && cached.expiresAt > now) return activeOnly(await cached.key);
      const unknownUntil = unknown.get(key);
      if (unknownUntil !== undefined) {
        if (unknownUntil > now) return null;
        unknown.delete(key);
      }
      if (entries.size >= MAX_ENTRIES) entries.clear();
      // Concurrent requests for one key share one lookup.
      const entry: Entry = { key: lookUpKey(em(), vault, key), expiresAt: now + ttlMs };
      entries.set(key, entry);
      const found = await entry.key.catch((error: unknown) => {
        if (entries.get(key) === entry) entries.delete(key);
        throw error;
      });
      if (found !== null && found !== 'inactive') return found;
      // Unless a change was heard meanwhile (then the answer may be stale already).
      if (entries.get(key) === entry) {
        entries.delete(key);
        if (found === null) rememberUnknown(key, now + unknownTtlMs);
      }
      return null;
    },
    forgetAll,
    async close() {
      closed = true;
      clearTimeout(retry);
      const connection = client;
      client = undefined;
      listening = false;
      forgetAll();
      await connection?.end().catch(() => undefined);
    },
  };
}
