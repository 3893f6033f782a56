import { expect, it } from 'vitest';

it('runs on the Node 24 that package.json installs, not the system Node', () => {
  expect(process.versions.node.split('.')[0]).toBe('24');
});
