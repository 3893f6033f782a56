// Text a visitor wrote, made safe to show to the form's owner: no bidirectional controls (they
// reorder what is displayed: `invoice\u202efdp.exe` shows as `invoiceexe.pdf`), and where one
// line is meant, no line breaks or other control characters that could start a line of its own.

/** The embedding, override and isolate controls U+202A–U+202E and U+2066–U+2069. */
const BIDI_CONTROLS = /[\u202a-\u202e\u2066-\u2069]/g;
const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g;

export const withoutBidiControls = (value: string) => value.replace(BIDI_CONTROLS, '');

/** One line: bidi controls removed, every run of control characters (CR, LF, tab...) one space. */
export const oneLine = (value: string) => withoutBidiControls(value).replace(CONTROLS, ' ');
