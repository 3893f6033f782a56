// HTML escaping for email bodies: nothing a visitor or a caller wrote becomes markup.
export const escapeHtml = (value: string) => value.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);

/** The frame every HTML email shares. */
export const htmlDocument = (body: string) =>
  `<!doctype html>\n<html><body style="font-family:sans-serif;line-height:1.5;max-width:40em">\n${body}\n</body></html>`;
