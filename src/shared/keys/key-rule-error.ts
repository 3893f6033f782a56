// What a broken rule of the keys feature throws: its code, the input it is about and the message
// the API answers with. A module of its own, so that ./email-layout.ts, which ./keys.ts imports,
// throws it without a circle of imports; ./keys.ts passes it on to the other features.

/** A rule was broken; `field` names the input it is about. */
export class KeyRuleError extends Error {
  override name = 'KeyRuleError';
  readonly field: string;
  readonly code: 'limit' | 'invalid' | 'not_found' | 'email_cap';
  constructor(code: KeyRuleError['code'], field: string, message: string) {
    super(message);
    this.code = code;
    this.field = field;
  }
}

export class EmailCapError extends KeyRuleError {
  readonly retryAfterSeconds: number;
  constructor(retryAfterSeconds: number, field = 'email', message = 'Too many emails to this address. Please try again later.') {
    super('email_cap', field, message);
    this.retryAfterSeconds = retryAfterSeconds;
  }
}
