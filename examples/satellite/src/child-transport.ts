/**
 * An MCP client transport over a child process's stdin/stdout, like the SDK's
 * StdioClientTransport, with what a satellite needs on top:
 * - the exit code or signal, for the instance's status and logs;
 * - stdout lines that are not JSON-RPC (banners, stray prints) are logged instead of breaking
 *   the session, and stderr is split into lines for the logs;
 * - the child leads its own process group, so stopping it also stops what it started (npx runs
 *   the package in a grandchild): SIGTERM to the group, SIGKILL after a grace period.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { deserializeMessage, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js'

/** A process to start: what the satellite's isolation turns a package's command into. */
export interface ChildSpawn {
  command: string
  args: string[]
  /** The whole environment of the child. */
  env: Record<string, string>
  cwd?: string
  /** Start it as this user (a satellite running as root hands its sandboxes to an unprivileged one). */
  uid?: number
  gid?: number
  /** Written to the child's file descriptor 3, then closed (bubblewrap reads its `--args 3` there). */
  fd3?: string
}

export interface ChildOptions extends ChildSpawn {
  /** How long SIGTERM is given before SIGKILL. */
  graceMs?: number
  onLine(stream: 'stdout' | 'stderr', text: string): void
}

export interface ExitInfo {
  code: number | null
  signal: NodeJS.Signals | null
}

/** The longest JSON-RPC message read from stdout (a tool may answer with a large image). */
const MAX_MESSAGE = 32 * 1024 * 1024
/** The longest stderr line kept; log lines are cut much shorter anyway. */
const MAX_LOG_LINE = 64 * 1024

export class ChildTransport implements Transport {
  onclose?: () => void
  onerror?: (error: Error) => void
  onmessage?: (message: JSONRPCMessage) => void

  private child: ChildProcess | undefined
  private exitInfo: ExitInfo | undefined
  private exited: Promise<ExitInfo> | undefined
  private closing = false

  constructor(private readonly options: ChildOptions) {}

  get pid(): number | undefined {
    return this.child?.pid
  }

  /** How the process ended, once it has. */
  get exit(): ExitInfo | undefined {
    return this.exitInfo
  }

  /** True when close() ended the process, false when it ended on its own. */
  get stopped(): boolean {
    return this.closing
  }

  async start(): Promise<void> {
    if (this.child !== undefined) throw new Error('already started')
    const { fd3, uid, gid } = this.options
    const child = spawn(this.options.command, this.options.args, {
      env: this.options.env,
      cwd: this.options.cwd,
      stdio: fd3 === undefined ? ['pipe', 'pipe', 'pipe'] : ['pipe', 'pipe', 'pipe', 'pipe'],
      shell: false,
      detached: process.platform !== 'win32',
      windowsHide: true,
      ...(uid === undefined ? {} : { uid, gid }),
    })
    this.child = child
    if (fd3 !== undefined) {
      const extra = child.stdio[3] as NodeJS.WritableStream | null
      extra?.on('error', () => undefined)
      extra?.end(fd3)
    }
    this.exited = new Promise((resolve) => {
      const ended = (info: ExitInfo) => {
        if (this.exitInfo !== undefined) return
        this.exitInfo = info
        resolve(info)
        this.onclose?.()
      }
      child.once('close', (code, signal) => ended({ code, signal }))
      // A process that could not be started (no such program) ends here, with no exit code.
      child.once('error', () => {
        if (child.pid === undefined) ended({ code: null, signal: null })
      })
    })
    splitLines(child.stdout!, (line) => this.receive(line), MAX_MESSAGE)
    splitLines(child.stderr!, (line) => this.options.onLine('stderr', line), MAX_LOG_LINE)
    child.stdin!.on('error', (error) => this.onerror?.(error))
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve)
      child.once('error', (error) => {
        reject(new Error(`could not start ${this.options.command}: ${(error as NodeJS.ErrnoException).code ?? error.message}`))
      })
    })
  }

  async send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.child?.stdin
    if (stdin == null || stdin.destroyed || this.exitInfo !== undefined) throw new Error('the server process is not running')
    if (!stdin.write(serializeMessage(message))) await new Promise((resolve) => stdin.once('drain', resolve))
  }

  /** Ends the process: stdin closed and SIGTERM to its group, SIGKILL after the grace period. */
  async close(): Promise<void> {
    const child = this.child
    if (child === undefined || this.exited === undefined) return
    this.closing = true
    if (this.exitInfo === undefined) {
      child.stdin?.end()
      signal(child, 'SIGTERM')
      const timer = setTimeout(() => signal(child, 'SIGKILL'), this.options.graceMs ?? 5000)
      await this.exited
      clearTimeout(timer)
    }
  }

  private receive(line: string): void {
    if (line.trim() === '') return
    let message: JSONRPCMessage
    try {
      message = deserializeMessage(line)
    } catch {
      this.options.onLine('stdout', line)
      return
    }
    this.onmessage?.(message)
  }
}

/** The whole process group on POSIX (the child leads it), the process alone elsewhere. */
function signal(child: ChildProcess, name: NodeJS.Signals): void {
  try {
    if (process.platform !== 'win32' && child.pid !== undefined) process.kill(-child.pid, name)
    else child.kill(name)
  } catch {
    // Already gone.
  }
}

/**
 * Calls `onLine` with each complete line of `stream` (UTF-8, without its end of line). A line
 * longer than `maxLine` characters is cut there (a process printing megabytes without a newline).
 */
export function splitLines(stream: NodeJS.ReadableStream, onLine: (line: string) => void, maxLine: number): void {
  // Parts of the unfinished line, so a long message arriving in many chunks is joined once.
  let parts: string[] = []
  let length = 0
  stream.setEncoding('utf8')
  stream.on('data', (chunk: string) => {
    let start = 0
    let index: number
    while ((index = chunk.indexOf('\n', start)) !== -1) {
      parts.push(chunk.slice(start, index))
      onLine(parts.join('').replace(/\r$/, ''))
      parts = []
      length = 0
      start = index + 1
    }
    const rest = chunk.slice(start)
    if (rest !== '') {
      parts.push(rest)
      length += rest.length
    }
    if (length > maxLine) {
      onLine(parts.join('').slice(0, maxLine))
      parts = []
      length = 0
    }
  })
  stream.on('end', () => {
    if (length > 0) onLine(parts.join(''))
    parts = []
    length = 0
  })
}
