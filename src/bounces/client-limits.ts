// Per client address: how many connections it holds open, and how many messages it sent in the
// current minute. In memory, per receiver process: a bound on what one address can cost this
// process, not a fleet-wide quota (a relay retries what is refused with 4xx).

export class ClientLimits {
  private readonly open = new Map<string, number>();
  private readonly sent = new Map<string, number>();
  private minute = 0;
  private readonly maxConnections: number;
  private readonly messagesPerMinute: number;

  constructor(maxConnections: number, messagesPerMinute: number) {
    this.maxConnections = maxConnections;
    this.messagesPerMinute = messagesPerMinute;
  }

  /** False when the address holds its maximum already (the connection is then refused, not counted). */
  connect(address: string): boolean {
    const count = this.open.get(address) ?? 0;
    if (count >= this.maxConnections) return false;
    this.open.set(address, count + 1);
    return true;
  }

  /** Only for a connection `connect` admitted: a refused one was never counted. */
  disconnect(address: string): void {
    const count = (this.open.get(address) ?? 0) - 1;
    if (count > 0) this.open.set(address, count);
    else this.open.delete(address);
  }

  /** Counts one message; false past the minute's allowance. */
  message(address: string, now = Date.now()): boolean {
    const minute = Math.floor(now / 60_000);
    // A new minute forgets the last one's counts: the map holds only this minute's addresses.
    if (minute !== this.minute) {
      this.minute = minute;
      this.sent.clear();
    }
    const count = (this.sent.get(address) ?? 0) + 1;
    this.sent.set(address, count);
    return count <= this.messagesPerMinute;
  }
}
