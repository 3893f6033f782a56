// One template mechanism for every page and email: Liquid files (liquidjs). HTML templates escape
// every output by default; raw output must be asked for by name (`{{ value | raw }}`). Text
// templates (the plain-text parts of emails) do not escape. Templates are parsed once and cached.
// Inside templates, `layout` and `render` name files in full (`'layout.html.liquid'`).
import { Liquid } from 'liquidjs';

export type Templates = { render: (name: string, data: Record<string, unknown>) => string };

export function createTemplates(root: string, kind: 'html' | 'text'): Templates {
  const engine = new Liquid({
    root,
    extname: '.liquid',
    cache: true,
    // A misspelt variable or filter is an error, not a silent blank.
    strictVariables: true,
    strictFilters: true,
    ...(kind === 'html' ? { outputEscape: 'escape' as const } : {}),
  });
  // liquidjs adds the extension only to names without one, and email names have one (`x.text`).
  const file = (name: string) => (name.endsWith('.liquid') ? name : `${name}.liquid`);
  return { render: (name, data) => engine.renderFileSync(file(name), data) as string };
}
