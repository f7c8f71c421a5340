/** Where a batch goes: a synchronous sonic-boom (pino.destination), or anything that writes whole strings. */
export interface LineSink {
  write(chunk: string): unknown
  flushSync?(): void
}

/**
 * Log lines gathered into chunks of about `minLength` characters before they reach the sink, in
 * the order they were written. sonic-boom buffers too, but measures the UTF-8 length of its
 * whole pending buffer on every write (to respect its largest write), which grows with the buffer:
 * about half a microsecond per line in a profile of a session read with a 4 KiB buffer. Here a
 * line costs an append; the sink sees one write per chunk. `flush` writes what is pending, and
 * nothing at all when nothing is (sonic-boom's wrote an empty chunk: a quiet process made a system
 * call ten times a second).
 *
 * pino writes to it as to any stream, and the hand-written access line (logging.ts) too.
 */
export class LineBatch {
  private pending = ''

  constructor(
    private readonly sink: LineSink,
    private readonly minLength: number,
  ) {}

  write(line: string): boolean {
    this.pending += line
    if (this.pending.length >= this.minLength) this.flush()
    return true
  }

  flush(callback?: (error?: Error) => void): void {
    if (this.pending !== '') {
      const chunk = this.pending
      this.pending = ''
      this.sink.write(chunk)
    }
    callback?.()
  }

  /** At exit: the pending lines, and whatever the sink holds. */
  flushSync(): void {
    this.flush()
    this.sink.flushSync?.()
  }
}
