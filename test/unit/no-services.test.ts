// The rule of the unit tier (test/setup/no-services.ts): a test here that would reach or start a
// service fails, naming the rule, rather than depending on what runs on the machine.
import { exec, execFileSync, fork, spawn } from 'node:child_process';
import net from 'node:net';
import { describe, expect, it } from 'vitest';

describe('a unit test', () => {
  it('may not open a network connection', () => {
    expect(() => net.connect(5432, '127.0.0.1')).toThrow(/a unit test may not open a network connection/);
  });

  it('may not listen on a port', () => {
    expect(() => net.createServer().listen(0)).toThrow(/a unit test may not listen on a port/);
  });

  it('may not start a program that runs beside it, by any of the ways to', () => {
    expect(() => spawn('redis-server')).toThrow(/a unit test may not start a program beside it/);
    expect(() => exec('redis-server')).toThrow(/a unit test may not start a program beside it/);
    expect(() => fork('src/api/main.ts')).toThrow(/a unit test may not start a program beside it/);
  });

  it('may run a program to its end, which leaves nothing running', () => {
    expect(execFileSync(process.execPath, ['-e', 'process.stdout.write("done")'], { encoding: 'utf8' })).toBe('done');
  });
});
