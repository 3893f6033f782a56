// The kinds of delivery, one descriptor each: its job name, the table of its rows, the status and
// attempt columns there, the job field carrying the row's id, its Message-ID prefix and its metric
// label, and its queue. The claim, the outcome writes, the reconciler, the metrics and the job constructors all
// read them from here; a new kind is one more entry plus its renderer or sender.

export type DeliveryKind = {
  /** The BullMQ job name. */
  job: string;
  /** The queue its jobs go to: emails share the SMTP circuit breaker, webhooks have their own concurrency. */
  queue: 'email' | 'webhook';
  table: string;
  /** The job field that carries the row's id (kept as it was, so jobs already queued still run). */
  idField: string;
  /** The Message-ID is `<prefix-rowid@domain>`, so a resend of the same email is recognisable. */
  messageIdPrefix: string;
  /** The `kind` label of the delivery metrics (the table's name, as dashboards already know it). */
  metricLabel: string;
};

export const deliveryKinds = {
  submission: {
    job: 'submission',
    queue: 'email',
    table: 'submissions',
    idField: 'submissionId',
    messageIdPrefix: 'submission',
    metricLabel: 'submissions',
  },
  'key-email': {
    job: 'key-email',
    queue: 'email',
    table: 'key_emails',
    idField: 'keyEmailId',
    messageIdPrefix: 'key-email',
    metricLabel: 'key_emails',
  },
  autoresponse: {
    job: 'autoresponse',
    queue: 'email',
    table: 'autoresponses',
    idField: 'autoresponseId',
    messageIdPrefix: 'autoresponse',
    metricLabel: 'autoresponses',
  },
  'recipient-copy': {
    job: 'recipient-copy',
    queue: 'email',
    table: 'recipient_copies',
    idField: 'copyId',
    messageIdPrefix: 'copy',
    metricLabel: 'recipient_copies',
  },
  webhook: {
    job: 'webhook',
    queue: 'webhook',
    table: 'webhook_deliveries',
    idField: 'deliveryId',
    // Not an email: the prefix of the `webhook-id` header (Standard Webhooks), stable across retries.
    messageIdPrefix: 'msg_',
    metricLabel: 'webhook_deliveries',
  },
} as const satisfies Record<string, DeliveryKind>;

export type DeliveryKindName = keyof typeof deliveryKinds;
export type DeliveryKindOf<N extends DeliveryKindName> = (typeof deliveryKinds)[N];

/** A job's payload: the row's id under the kind's field, and the id of the request that created the row (for the logs). */
export type JobData<N extends DeliveryKindName> = Record<DeliveryKindOf<N>['idField'], string> & { requestId?: string };

/** The kinds whose jobs go to queue `Q`. */
export type KindsIn<Q extends DeliveryKind['queue']> = {
  [N in DeliveryKindName]: DeliveryKindOf<N>['queue'] extends Q ? N : never;
}[DeliveryKindName];

export const isDeliveryKind = (name: string): name is DeliveryKindName => Object.hasOwn(deliveryKinds, name);

/**
 * The Message-ID of a row's email, derived from the row's id (so a resend of the same email is
 * recognisable) and MAIL_FROM's domain.
 */
export function messageIdFor(kind: DeliveryKindName, id: string, mailFrom: string): string {
  const domain = /@([^>\s]+)>?\s*$/.exec(mailFrom)?.[1] ?? 'localhost';
  return `<${deliveryKinds[kind].messageIdPrefix}-${id}@${domain}>`;
}
