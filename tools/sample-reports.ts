// Delivery status notifications (RFC 3464) and abuse reports (RFC 5965) shaped as a relay sends
// them back to a return path: for `npm run bounce:sample` and the bounce receiver's tests.

export type DsnFields = {
  /** The return path the report is sent to (its To:). */
  to: string;
  /** The address that bounced. */
  recipient?: string;
  action?: 'failed' | 'delayed' | 'delivered';
  status?: string;
  diagnostic?: string;
  reportingMta?: string;
};

/** The fields of the report's `message/delivery-status` part: the per-message block, then the recipient's. */
export function deliveryStatusFields(fields: Omit<DsnFields, 'to'>): string {
  const { recipient = 'owner@example.test', action = 'failed', status = '5.1.1', reportingMta = 'relay.example.net' } = fields;
  const diagnostic = fields.diagnostic ?? `smtp; 550 ${status} <${recipient}>: Recipient address rejected: User unknown`;
  return [
    `Reporting-MTA: dns; ${reportingMta}`,
    '',
    `Final-Recipient: rfc822; ${recipient}`,
    `Action: ${action}`,
    `Status: ${status}`,
    `Diagnostic-Code: ${diagnostic}`,
  ].join('\r\n');
}

export function dsn(fields: DsnFields): string {
  const { to, reportingMta = 'relay.example.net' } = fields;
  return [
    `From: MAILER-DAEMON@${reportingMta}`,
    `To: ${to}`,
    'Subject: Undelivered Mail Returned to Sender',
    `Message-ID: <${Math.random().toString(36).slice(2)}@${reportingMta}>`,
    'MIME-Version: 1.0',
    'Content-Type: multipart/report; report-type=delivery-status; boundary="b1"',
    '',
    '--b1',
    'Content-Type: text/plain',
    '',
    'Your message could not be delivered.',
    '',
    '--b1',
    'Content-Type: message/delivery-status',
    '',
    deliveryStatusFields(fields),
    '',
    '--b1',
    'Content-Type: text/rfc822-headers',
    '',
    'Subject: New submission',
    '',
    '--b1--',
    '',
  ].join('\r\n');
}

/** The fields of an ARF report's `message/feedback-report` part. */
export function feedbackReportFields(feedbackType = 'abuse'): string {
  return [`Feedback-Type: ${feedbackType}`, 'User-Agent: ExampleFBL/1.0', 'Version: 1'].join('\r\n');
}

/** An ARF abuse report: the receiving mailbox marked the email as spam. */
export function abuseReport(to: string, feedbackType = 'abuse'): string {
  return [
    'From: fbl@isp.example',
    `To: ${to}`,
    'Subject: Abuse report',
    'MIME-Version: 1.0',
    'Content-Type: multipart/report; report-type=feedback-report; boundary="b2"',
    '',
    '--b2',
    'Content-Type: text/plain',
    '',
    'This is an email abuse report.',
    '',
    '--b2',
    'Content-Type: message/feedback-report',
    '',
    feedbackReportFields(feedbackType),
    '',
    '--b2',
    'Content-Type: text/rfc822-headers',
    '',
    'Subject: New submission',
    '',
    '--b2--',
    '',
  ].join('\r\n');
}
