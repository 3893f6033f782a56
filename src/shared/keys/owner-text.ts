// Text an owner writes that reaches other people (key labels, the autoresponse, the email layout):
// it may carry no control character and no bidirectional control. Controls break header lines and
// terminals; bidi controls (U+202E and kin) make a reader show text in another order than it is
// written, so that a link or a name reads as something else.

/** Every control (C0, DEL, C1), the line and paragraph separators, and every bidi control. */
const ONE_LINE_FORBIDDEN = /[\p{Cc}\u2028\u2029\p{Bidi_Control}]/u;
/** The same, but for tabs and line feeds, which a multi-line text keeps. */
const MULTI_LINE_FORBIDDEN = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\p{Bidi_Control}]/u;

/** Whether a one-line text (a label, a subject) carries a forbidden character. */
export const hasForbiddenInLine = (text: string): boolean => ONE_LINE_FORBIDDEN.test(text);

/** Whether a multi-line text (the autoresponse's) carries a forbidden character other than a tab or a line feed. */
export const hasForbiddenInText = (text: string): boolean => MULTI_LINE_FORBIDDEN.test(text);

/** The text without bidi controls: for what was saved before they were refused. */
export const withoutBidiControls = (text: string): string => text.replace(/\p{Bidi_Control}/gu, '');
