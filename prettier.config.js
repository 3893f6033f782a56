// Prettier's options: those that change the fewest lines of the code as it is written.
/** @type {import('prettier').Config} */
export default {
  // The code's lines run long (one in eight is past 100 characters): of the widths tried, 160 changes the fewest.
  printWidth: 160,
  singleQuote: true,
  // Keys quoted by hand stay quoted (the setting groups of config-schema.ts, next to names with spaces).
  quoteProps: 'preserve',
  // YAML keeps its double quotes (the Kubernetes manifests, docker-compose.yml).
  overrides: [{ files: ['*.yaml', '*.yml'], options: { singleQuote: false } }],
};
