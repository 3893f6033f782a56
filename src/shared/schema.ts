// Every table of the service, for the ORM: each feature's entities, gathered here above the
// features so that the infrastructure that opens the database imports none of them. `npm run
// migration:create` compares the migrations with this list.
import { AutoresponseSchema } from './autoresponses/entities.ts';
import { AddressBouncesSchema, MailboxComplaintsSchema } from './bounces/entities.ts';
import { SecretCheckSchema } from './infra/db/secret-check-entity.ts';
import { KeyEmailSchema, MailboxAllowanceSchema, RecipientSchema, VerificationKeySchema } from './keys/entities.ts';
import { OwnerSessionSchema, OwnerSignInSchema } from './owners/entities.ts';
import { KeyRecipientSchema, RecipientCopySchema } from './recipients/entities.ts';
import { OwnerSpamMarksSchema, SpamCampaignVoteSchema, SpamTeachingSchema } from './spam/entities.ts';
import { AttachmentSchema, DeliveryAttemptSchema, IdempotencyKeySchema, SubmissionSchema } from './submissions/entities.ts';
import { WebhookDeliverySchema, WebhookEndpointSchema } from './webhooks/entities.ts';

export const entities = [
  VerificationKeySchema,
  SubmissionSchema,
  AttachmentSchema,
  DeliveryAttemptSchema,
  KeyEmailSchema,
  RecipientSchema,
  MailboxAllowanceSchema,
  AddressBouncesSchema,
  MailboxComplaintsSchema,
  OwnerSpamMarksSchema,
  SpamTeachingSchema,
  SpamCampaignVoteSchema,
  OwnerSignInSchema,
  OwnerSessionSchema,
  WebhookEndpointSchema,
  WebhookDeliverySchema,
  AutoresponseSchema,
  KeyRecipientSchema,
  RecipientCopySchema,
  IdempotencyKeySchema,
  SecretCheckSchema,
];
