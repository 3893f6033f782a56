// A signature database of the tests' own for clamd (the official one is not needed, and is
// hundreds of megabytes): an MD5 signature of a generated file and a body signature of the EICAR
// test string. Without vitest, so the benchmarks use it too.
import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';

/** A file these signatures call infected (by its MD5 and size): harmless bytes, made here. */
export const TEST_INFECTED_BYTES: Buffer = Buffer.from(
  Array.from({ length: 32 }, (_, n) => `contact-form-service test file ${n}: infected by its own signature only\n`).join(''),
);
/** What clamd reports for TEST_INFECTED_BYTES: signatures outside ClamAV's signed databases get `.UNOFFICIAL`. */
export const TEST_INFECTED_SIGNATURE = 'Cfs.Test.Infected.UNOFFICIAL';
/** The EICAR anti-virus test string (https://www.eicar.org), which every scanner is meant to detect. */
export const EICAR = String.raw`X5O!P%@AP[4\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*`;
/** What clamd reports for a file that holds EICAR anywhere. */
export const EICAR_SIGNATURE = 'Cfs.Test.Eicar.UNOFFICIAL';

/** Writes the signatures into `dir` (made if missing): a DatabaseDirectory for clamd. */
export async function writeTestSignatures(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  const md5 = createHash('md5').update(TEST_INFECTED_BYTES).digest('hex');
  // .hdb: md5:size:name. .ndb: name:target type (0 = any file):offset (* = anywhere):hex body.
  await writeFile(path.join(dir, 'cfs-test.hdb'), `${md5}:${TEST_INFECTED_BYTES.length}:Cfs.Test.Infected\n`);
  await writeFile(path.join(dir, 'cfs-test.ndb'), `Cfs.Test.Eicar:0:*:${Buffer.from(EICAR).toString('hex')}\n`);
}
