import { Migration } from '@mikro-orm/migrations';

/**
 * The reconciler finds the submissions whose owner's email a worker of the previous release sent
 * without the copies and the autoresponse this release makes (src/workers/housekeeping/unfinished-fan-outs.ts):
 * settled, sent, with no autoresponse outcome. Its index holds only those, so a run reads them
 * and not the day's other settled rows. Its predicate names no column a claim writes: a claim
 * stays a HOT update.
 *
 * Not in a transaction: the index is built CONCURRENTLY, writes go on meanwhile (docs/upgrading.md).
 * An index left invalid by a build that failed is built again.
 */
export class Migration20261207180000_unfinished_fan_outs extends Migration {
  override name = 'Migration20261207180000_unfinished_fan_outs';

  override isTransactional(): boolean {
    return false;
  }

  override async up(): Promise<void> {
    await this.execute(`drop index concurrently if exists "submissions_unfinished_fan_out_idx";`);
    await this.execute(
      `create index concurrently "submissions_unfinished_fan_out_idx" on "submissions" ("created_at", "id") where "settled" and "autoresponse" is null and "sent_at" is not null;`,
    );
  }

  override async down(): Promise<void> {
    await this.execute(`drop index concurrently if exists "submissions_unfinished_fan_out_idx";`);
  }
}
