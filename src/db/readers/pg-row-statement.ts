import pg from 'pg'

/** The parts of pg's connection a statement is written to (pg's own Query uses the same). */
interface Connection {
  stream: { cork?(): void; uncork?(): void }
  parsedStatements: Record<string, string | undefined>
  submittedNamedStatements: Record<string, string | undefined>
  parse(query: { name: string; text: string; types: number[] }): void
  bind(config: { statement: string; values: Array<string | null> }): void
  describe(config: { type: 'P'; name: string }): void
  execute(config: { portal: string; rows: number }): void
  sync(): void
  close(config: { type: 'S'; name: string }): void
  sendCopyFail(message: string): void
}

type Parser = (text: string) => unknown

/**
 * A statement's parameter as PostgreSQL reads it in text form. The lookups that run here pass
 * strings, numbers, booleans and dates; anything else is a bug in the caller.
 */
function parameter(value: unknown): string | null {
  if (value === null || value === undefined) return null
  if (typeof value === 'string') return value
  if (value instanceof Date) return value.toISOString()
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value)
  throw new TypeError(`a row statement parameter must be a string, number, boolean or date, not ${typeof value}`)
}

/**
 * A named statement that answers at most one row, run straight on pg's connection: the credential
 * lookups every authenticated request makes. pg's own Query asks the server to describe the result
 * on every execution and rebuilds its row parsers from the description (an object per column and
 * a parser lookup per column, each time). The statement's result columns never change, so they are
 * described once per process; afterwards an execution is Bind, Execute and Sync (Parse too, the
 * first time on each connection), and the row's columns go through the parsers learned then.
 *
 * `parsersFor` picks a column's parser from its type (see `openPostgres`: date and time values
 * are kept as sent, for the columns' own decoders).
 */
export class RowStatement {
  private parsers: Parser[] | undefined

  constructor(
    readonly name: string,
    readonly text: string,
    private readonly parsersFor: (oid: number) => Parser,
  ) {}

  /** One execution, to hand to a pg client's `query` with a callback. Throws at once for a parameter of no text form. */
  run(values: readonly unknown[]): RowExecution {
    return new RowExecution(this, values.map(parameter))
  }

  /** @internal */
  needsDescription(): boolean {
    return this.parsers === undefined
  }

  /** @internal */
  learn(fields: ReadonlyArray<{ dataTypeID: number }>): void {
    this.parsers = fields.map((field) => this.parsersFor(field.dataTypeID))
  }

  /** @internal */
  decode(fields: ReadonlyArray<string | null>): unknown[] {
    const parsers = this.parsers!
    const row = new Array<unknown>(fields.length)
    for (let index = 0; index < fields.length; index++) {
      const text = fields[index]!
      row[index] = text === null ? null : parsers[index]!(text)
    }
    return row
  }
}

/**
 * One execution of a RowStatement, as pg's client drives it (a Submittable): the client calls
 * `submit` when the connection is free, then hands it the server's messages until ReadyForQuery,
 * or an error. `callback` is set by the client's `query`.
 */
export class RowExecution implements pg.Submittable {
  callback: ((error: Error | null, row?: unknown[]) => void) | undefined
  private row: unknown[] | undefined
  private failure: Error | undefined
  private done = false

  constructor(
    private readonly statement: RowStatement,
    private readonly values: Array<string | null>,
  ) {}

  /** Read by the client when the server confirms the Parse: the statement then counts as prepared on this connection. */
  get name(): string {
    return this.statement.name
  }

  get text(): string {
    return this.statement.text
  }

  submit(submitted: pg.Connection): void {
    const connection = submitted as unknown as Connection
    const { name, text } = this.statement
    // One write for all the messages, as pg's own Query does.
    connection.stream.cork?.()
    try {
      if (connection.parsedStatements[name] === undefined && connection.submittedNamedStatements[name] === undefined) {
        connection.parse({ name, text, types: [] })
        connection.submittedNamedStatements[name] = text
      }
      connection.bind({ statement: name, values: this.values })
      if (this.statement.needsDescription()) connection.describe({ type: 'P', name: '' })
      connection.execute({ portal: '', rows: 0 })
      connection.sync()
    } finally {
      connection.stream.uncork?.()
    }
  }

  handleRowDescription(message: { fields: ReadonlyArray<{ dataTypeID: number }> }): void {
    this.statement.learn(message.fields)
  }

  handleDataRow(message: { fields: ReadonlyArray<string | null> }): void {
    if (this.row !== undefined || this.failure !== undefined) return
    try {
      this.row = this.statement.decode(message.fields)
    } catch (error) {
      this.failure = error as Error
    }
  }

  handleCommandComplete(): void {}

  handleEmptyQuery(): void {}

  handlePortalSuspended(): void {}

  handleCopyInResponse(connection: Connection): void {
    connection.sendCopyFail('a row statement copies nothing')
  }

  handleCopyData(): void {}

  /** The server's error (the client has let go of this execution already), or the connection's loss. */
  handleError(error: Error): void {
    this.finish(this.failure ?? error)
  }

  handleReadyForQuery(): void {
    if (this.failure !== undefined) this.finish(this.failure)
    else this.finish(null, this.row)
  }

  private finish(error: Error | null, row?: unknown[]): void {
    if (this.done) return
    this.done = true
    this.callback?.(error, row)
  }
}
