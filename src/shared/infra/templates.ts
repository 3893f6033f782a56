// One template mechanism for every page and email: Nunjucks files (`NAME.njk`). HTML templates escape
// every output by default; raw output must be asked for by name (`{{ value | safe }}`). Text
// templates (the plain-text parts of emails) do not escape. Templates are compiled once and cached.
// Inside templates, `extends` and `include` name files in full (`'layout.html.njk'`).
import nunjucks from 'nunjucks';

export type Templates = { render: (name: string, data: Record<string, unknown>) => string };

export function createTemplates(root: string, kind: 'html' | 'text'): Templates {
  const env = new nunjucks.Environment(new nunjucks.FileSystemLoader(root, { noCache: false, watch: false }), {
    autoescape: kind === 'html',
    // A misspelt variable, or a null or undefined value, printed is an error, not a silent blank
    // (in a condition or a loop it reads as false or empty, as in JavaScript).
    throwOnUndefined: true,
  });
  return { render: (name, data) => env.render(`${name}.njk`, data) };
}
