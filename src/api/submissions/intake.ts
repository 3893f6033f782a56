// The intake: what happens to a submission posted to /api/contact-api/ (or /f/<key>), in order:
// rate limit (a small body read first: its ALTCHA mark is set with the limit) → parse (files
// stream to storage) → honeypot → validate → authenticate (+ captcha) → admit (recipient consent)
// → store (+ storage quota) → enqueue → (optionally wait) → respond. A request whose
// Idempotency-Key an earlier one stored is answered as that one was, from its key's check on.
import { newSubmissionId } from './submission-id.ts';
import type { ActiveKey } from '../../shared/keys/keys.ts';
import { keyEmailJob, submissionJob, webhookJob } from '../../shared/deliveries/delivery-jobs.ts';
import { enqueueCommitted } from './enqueue.ts';
import type { AppContext, AppDeps } from '../context.ts';
import { ApiError } from '../api-errors.ts';
import type { RateLimiter } from '../middleware/rate-limit.ts';
import { submissionsAccepted, submissionsRejected } from '../../shared/infra/metrics.ts';
import { admitSubmission, knownAdmission } from './admit.ts';
import { createConsentMemory } from './consent-memory.ts';
import { authenticateKey, vouchingKey } from './authenticate.ts';
import { CAPTCHA_FIELDS, verifyCaptcha } from './captcha.ts';
import type { Altcha, CheckedAnswer } from './altcha.ts';
import { limitSubmission } from './limit.ts';
import { readSubmissionBody, type SubmissionBody } from './body.ts';
import { requestDomain } from './domains.ts';
import { HONEYPOT_FIELDS, parseSubmissionFields, type RawFields } from './input.ts';
import { DEFAULT_ERROR_PATH, DEFAULT_SUCCESS_PATH, isBrowserFormPost, redirectTarget, withQuery } from './redirect.ts';
import { groupCommit } from '../../shared/infra/group-commit.ts';
import { saveSubmission, waitForDelivery, WriteOutcomeUnknown, writeSubmissionRows } from './store.ts';
import { findIdempotencyKey, findIdempotentAnswer, insertSubmissionBatch, type SubmissionRow } from '../../shared/submissions/submissions.ts';
import { IDEMPOTENCY_HEADER, IdempotencyKeyTaken, idempotencyKeyOf, idempotencyKeyReused, requestFingerprint } from './idempotency.ts';
import type { SubmissionInput } from './input.ts';

/** The submission handler: `pathKey` is the key of a /f/<key> path, undefined for /api/contact-api/. */
export type Intake = (ctx: AppContext, pathKey?: string) => Promise<void>;

/** The intake of one app: its group commit and its memory of unconfirmed mailboxes are shared by its requests. */
export function createIntake(deps: AppDeps, limiter: RateLimiter, altcha: Altcha): Intake {
  const honeypots = new Set([deps.config.HONEYPOT_FIELD, ...HONEYPOT_FIELDS]);
  const ignoredFields = new Set([...honeypots, ...Object.values(CAPTCHA_FIELDS)]);
  // Concurrent submissions share one INSERT, prepared on connections of their own (no one
  // request's); each is answered once its own has committed.
  const insertRow = groupCommit<SubmissionRow>(writeSubmissionRows((rows) => insertSubmissionBatch(deps.intakePool, rows)));
  // Unconfirmed mailboxes past their hourly allowance, known here: their held rows join the group commit.
  const consent = createConsentMemory();

  async function submit(ctx: AppContext, pathKey?: string): Promise<void> {
    const submissionId = newSubmissionId();
    const limited = await countingRefusal(limitSubmission(ctx, limiter, altcha, () => readSubmissionBody(ctx, deps.storage, submissionId)));
    // The ALTCHA answer whose mark this submission set: a refusal takes the mark back.
    let heldAnswer: CheckedAnswer | undefined = limited.altcha?.marked === true ? limited.altcha.answer : undefined;
    let body: SubmissionBody | undefined;
    let key: ActiveKey | undefined;
    let input: SubmissionInput | undefined;
    let idempotency: { key: string; fingerprint: string } | undefined;
    let saved = false;
    try {
      const idempotencyKey = idempotencyKeyOf(ctx.get(IDEMPOTENCY_HEADER));
      body = await limited.body();
      if (pathKey !== undefined) body = { ...body, fields: withPathKey(body.fields, pathKey) };
      if (idempotencyKey) idempotency = { key: idempotencyKey, fingerprint: requestFingerprint(body) };
      if (isHoneypotFilled(body.fields, honeypots)) {
        // A bot: answer as if accepted, so it learns nothing; keep nothing, send nothing.
        await removeFiles(
          ctx,
          deps,
          body.files.map((file) => file.storageKey),
        );
        submissionsRejected.inc({ reason: 'honeypot' });
        respondAccepted(ctx, { id: submissionId, attachments: body.files.length, emailStatus: 'queued' }, undefined);
        return;
      }
      input = parseSubmissionFields(body.fields, ignoredFields);
      const domain = requestDomain(ctx.get('Origin'), ctx.get('Referer'));
      // Forked only when asked for: a cached key and a row of the group commit need none.
      const em = () => ctx.state.em;
      key = await authenticateKey(em, deps.keys, input.accessKey, domain);
      // A retry: its captcha answer was spent by the first request, which is the answer.
      const earlier = idempotency && (await findIdempotencyKey(em(), key.id, idempotency.key));
      if (earlier) throw new IdempotencyKeyTaken(earlier);
      if (key.captcha) {
        const held = await verifyCaptcha({ id: key.id, captcha: key.captcha }, body.fields, ctx.state.clientIp, deps.config, altcha, limited.altcha);
        heldAnswer = held ?? heldAnswer;
      }
      const delivery = { notEmailSent: input.notEmailSent, fileCount: body.files.length };
      const activeKey = key;
      const known = knownAdmission(key, delivery, consent);

      const submission = await saveSubmission(em, {
        id: submissionId,
        key,
        input,
        files: body.files,
        clientIp: ctx.state.clientIp,
        // Kept for the owner's information; the column holds 2,048 characters.
        origin: (ctx.get('Origin') || ctx.get('Referer') || undefined)?.slice(0, 2048),
        storageQuotaMb: deps.config.KEY_STORAGE_QUOTA_MB,
        admit: known ? { known } : { run: (tx) => admitSubmission(tx, activeKey, delivery, deps.config.UNCONFIRMED_EMAILS_PER_HOUR) },
        insertRow,
        filesPool: deps.filesPool,
        idempotency,
      });
      saved = true;
      if (!known && submission.emailStatus === 'held') consent.rememberHeld(key.mailbox);

      // At once, not one after another: each joins its queue's next shared round trip.
      await Promise.all([
        submission.emailStatus === 'queued' ? enqueueCommitted(ctx, deps, submissionJob(submission.id, ctx.state.requestId)) : undefined,
        submission.confirmEmailId ? enqueueCommitted(ctx, deps, keyEmailJob(submission.confirmEmailId, ctx.state.requestId)) : undefined,
        ...submission.webhookDeliveries.map((delivery) => enqueueCommitted(ctx, deps, webhookJob(delivery.id, ctx.state.requestId))),
      ]);

      // With EMAIL_STATUS_WAIT_MS the answer can carry the delivery's outcome instead of `queued`.
      const emailStatus =
        submission.emailStatus === 'queued' && deps.config.EMAIL_STATUS_WAIT_MS > 0
          ? await waitForDelivery(em(), submission.id, deps.config.EMAIL_STATUS_WAIT_MS)
          : submission.emailStatus;

      submissionsAccepted.inc();
      respondAccepted(ctx, { id: submission.id, attachments: body.files.length, emailStatus }, { successUrl: input.successUrl, key });
    } catch (thrown) {
      if (thrown instanceof WriteOutcomeUnknown) {
        // Neither answer would be true: close the connection without one. The files stay, as the
        // row may hold them; a committed row is delivered (the reconciler enqueues it).
        ctx.state.log.error({ err: thrown, submissionId }, 'submission write outcome unknown: connection closed without an answer');
        submissionsRejected.inc({ reason: 'outcome_unknown' });
        ctx.respond = false;
        ctx.req.socket.destroy();
        return;
      }
      // A refused or repeated request leaves nothing behind: its answer can be sent again, and the
      // files stored while reading it go too.
      if (!saved && heldAnswer) altcha.release(heldAnswer);
      if (!saved && body?.files.length)
        await removeFiles(
          ctx,
          deps,
          body.files.map((file) => file.storageKey),
        );
      if (thrown instanceof IdempotencyKeyTaken && thrown.fingerprint === idempotency?.fingerprint) {
        const first = await findIdempotentAnswer(ctx.state.em, thrown.submissionId);
        if (first && key) {
          respondAccepted(ctx, { id: thrown.submissionId, ...first }, { successUrl: input?.successUrl, key });
          return;
        }
      }
      const error = thrown instanceof IdempotencyKeyTaken ? idempotencyKeyReused() : thrown;
      submissionsRejected.inc({ reason: error instanceof ApiError ? error.id : 'internal' });
      if (error instanceof ApiError && isBrowserFormPost(ctx)) {
        const requested = body?.fields.find(([name]) => name === 'error_url')?.[1];
        // Only a valid key vouches for error_url: otherwise anyone could borrow the redirect.
        const voucher = key ?? (await errorUrlVoucher(ctx, deps, pathKey ?? body?.fields.find(([name]) => name === 'access_key')?.[1]));
        const target = voucher ? redirectTarget(typeof requested === 'string' ? requested : undefined, DEFAULT_ERROR_PATH, voucher) : DEFAULT_ERROR_PATH;
        const detail = errorDetail(error);
        const withError = withQuery(target, 'error', error.message);
        redirect(ctx, detail ? withQuery(withError, 'detail', detail) : withError);
        return;
      }
      throw error;
    }
  }

  return submit;
}

/** The rate limit's refusal, counted with the other rejected submissions. */
async function countingRefusal<T>(limited: Promise<T>): Promise<T> {
  try {
    return await limited;
  } catch (error) {
    submissionsRejected.inc({ reason: error instanceof ApiError ? error.id : 'internal' });
    throw error;
  }
}

/** The success answer: JSON, or for a plain HTML form a 303 to its success page. */
function respondAccepted(
  ctx: AppContext,
  accepted: { id: string; attachments: number; emailStatus: string },
  redirectTo: { successUrl: string | undefined; key: ActiveKey } | undefined,
): void {
  if (isBrowserFormPost(ctx)) {
    const target = redirectTarget(redirectTo?.successUrl, DEFAULT_SUCCESS_PATH, redirectTo?.key);
    redirect(ctx, withQuery(target, 'submission_id', accepted.id));
    return;
  }
  ctx.body = {
    success: true,
    message: 'Message sent successfully.',
    submission_id: accepted.id,
    attachments: accepted.attachments,
    email_status: accepted.emailStatus,
  };
}

const isHoneypotFilled = (fields: SubmissionBody['fields'], names: ReadonlySet<string>) =>
  fields.some(([field, value]) => names.has(field) && value !== undefined && value !== null && value !== '' && value !== false);

/**
 * The path's key first, as the `access_key` field. The same key in the body too is one key; another
 * stays, and is refused as a parameter given twice.
 */
function withPathKey(fields: RawFields, pathKey: string): RawFields {
  return [['access_key', pathKey], ...fields.filter(([name, value]) => !(name === 'access_key' && value === pathKey))];
}

/** For a browser's error page: each field the error names, and why ("email: This field is required."). */
function errorDetail(error: ApiError): string {
  return Object.entries(error.errors)
    .filter(([field]) => field !== '__all__')
    .map(([field, reasons]) => `${field}: ${reasons.join(' ')}`)
    .join('\n')
    .slice(0, 1000);
}

/** 303 See Other: the browser follows with a GET. */
function redirect(ctx: AppContext, location: string): void {
  ctx.redirect(location);
  ctx.status = 303;
}

/** The error came before the key was checked: check it now, for the redirect only. */
async function errorUrlVoucher(ctx: AppContext, deps: AppDeps, accessKey: unknown): Promise<ActiveKey | undefined> {
  if (accessKey === undefined) return undefined;
  return vouchingKey(() => ctx.state.em, deps.keys, accessKey, requestDomain(ctx.get('Origin'), ctx.get('Referer'))).catch((error: unknown) => {
    ctx.state.log.warn({ err: error }, 'could not check the key for error_url; using the default error page');
    return undefined;
  });
}

async function removeFiles(ctx: AppContext, deps: AppDeps, keys: string[]): Promise<void> {
  await deps.storage.remove(keys).catch((error: unknown) => ctx.state.log.error({ err: error, keys }, 'could not delete the files of a refused submission'));
}
