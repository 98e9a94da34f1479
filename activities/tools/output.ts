/**
 * `text` cut to at most about `cap` characters, keeping its head and its tail with
 * `[… N chars cut …]` in between (the end of a command's output usually says why it failed).
 */
export function capHeadTail(text: string, cap: number): string {
  if (text.length <= cap) return text;
  const head = Math.ceil(cap / 2);
  const tail = Math.max(0, cap - head);
  const cut = text.length - head - tail;
  return `${text.slice(0, head)}\n[… ${cut} chars cut …]\n${tail > 0 ? text.slice(-tail) : ''}`;
}

/** `text` cut to at most about `cap` characters, keeping its head. */
export function capHead(text: string, cap: number): string {
  if (text.length <= cap) return text;
  return `${text.slice(0, cap)}\n[… ${text.length - cap} chars cut …]`;
}

/**
 * Collects a stream of output without holding more than about `cap` characters: the first
 * half and a rolling tail, with the count of what fell between.
 */
export class HeadTailBuffer {
  private head = '';
  private tail = '';
  private dropped = 0;
  constructor(private readonly cap: number) {}

  push(chunk: string): void {
    const headCap = Math.ceil(this.cap / 2);
    const tailCap = this.cap - headCap;
    if (this.head.length < headCap) {
      const take = chunk.slice(0, headCap - this.head.length);
      this.head += take;
      chunk = chunk.slice(take.length);
    }
    if (chunk.length === 0) return;
    this.tail += chunk;
    if (this.tail.length > tailCap) {
      this.dropped += this.tail.length - tailCap;
      this.tail = tailCap > 0 ? this.tail.slice(-tailCap) : '';
    }
  }

  toString(): string {
    return this.dropped > 0 ? `${this.head}\n[… ${this.dropped} chars cut …]\n${this.tail}` : this.head + this.tail;
  }
}
