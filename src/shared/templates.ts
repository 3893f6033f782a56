// One template mechanism for every page and email: Liquid files (liquidjs). HTML templates escape
// every output by default; raw output must be asked for by name (`{{ value | raw }}`). Text
// templates (the plain-text parts of emails) do not escape. Templates are parsed once and cached.
// Inside templates, `layout` and `render` name files in full (`'layout.html.liquid'`).
import { Liquid } from 'liquidjs';
import { compileTemplate, Unsupported, type Compiled } from './template-compiler.ts';

export type Templates = { render: (name: string, data: Record<string, unknown>) => string };

/**
 * `compiled`: render through ./template-compiler.ts where a template and its data allow it, with
 * liquidjs's output byte for byte (the emails, rendered once per delivery); liquidjs otherwise.
 */
export function createTemplates(root: string, kind: 'html' | 'text', options: { compiled?: boolean } = {}): Templates {
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
  const liquid = (name: string, data: Record<string, unknown>) => engine.renderFileSync(file(name), data) as string;
  if (!options.compiled) return { render: liquid };
  const compiled = new Map<string, Compiled | undefined>();
  return {
    render(name, data) {
      if (!compiled.has(name)) compiled.set(name, compileTemplate(engine, engine.parseFileSync(file(name))));
      const fast = compiled.get(name);
      if (fast) {
        try {
          return fast(data);
        } catch (error) {
          if (!(error instanceof Unsupported)) throw error;
        }
      }
      return liquid(name, data);
    },
  };
}
