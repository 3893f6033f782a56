// The kinds of delivery, one descriptor each: its job name, the table of its rows, the status and
// attempt columns there, the job field carrying the row's id, its Message-ID prefix and its metric
// label. The claim, the outcome writes, the reconciler, the metrics and the job constructors all
// read them from here; a new kind is one more entry plus its renderer or sender.

export type DeliveryKind = {
  /** The BullMQ job name. */
  job: string;
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
    table: 'submissions',
    idField: 'submissionId',
    messageIdPrefix: 'submission',
    metricLabel: 'submissions',
  },
  'key-email': {
    job: 'key-email',
    table: 'key_emails',
    idField: 'keyEmailId',
    messageIdPrefix: 'key-email',
    metricLabel: 'key_emails',
  },
} as const satisfies Record<string, DeliveryKind>;

export type DeliveryKindName = keyof typeof deliveryKinds;
export type DeliveryKindOf<N extends DeliveryKindName> = (typeof deliveryKinds)[N];

/** A job's payload: the row's id under the kind's field, and the id of the request that created the row (for the logs). */
export type JobData<N extends DeliveryKindName> = { [F in DeliveryKindOf<N>['idField']]: string } & { requestId?: string };

export const isDeliveryKind = (name: string): name is DeliveryKindName => Object.hasOwn(deliveryKinds, name);
