import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { existsSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { projectRoot } from '../../src/paths.js'
import { TEST_SECRET } from './app.js'

/** The built server (`npm test` builds before running vitest). */
export const SERVER_ENTRY = join(projectRoot, 'dist/src/server.js')
export const serverBuilt = existsSync(SERVER_ENTRY)

export interface ServerProcess {
  child: ChildProcess
  /** `http://127.0.0.1:<port>` */
  url: string
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string
  /** Sends `signal` and resolves with the exit code (null when killed by a signal). */
  stop(signal?: NodeJS.Signals): Promise<number | null>
}

/**
 * Starts `node dist/src/server.js` as a real process, the way `npm start` does, on a free port of
 * 127.0.0.1, and resolves once it logged its address. Runs in an empty working directory, so no
 * `.env` file of the checkout leaks in; `env` is the whole configuration beside PATH.
 */
export async function startServerProcess(env: Record<string, string>, { timeoutMs = 15_000 } = {}): Promise<ServerProcess> {
  const cwd = mkdtempSync(join(tmpdir(), 'svc-proc-'))
  const child = spawn(process.execPath, [SERVER_ENTRY], {
    cwd,
    env: { PATH: process.env.PATH, PORT: '0', HOST: '127.0.0.1', ENCRYPTION_SECRET: TEST_SECRET, LOG_LEVEL: 'info', DATA_DIR: join(cwd, 'data'), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout!.on('data', (chunk) => (output += chunk))
  child.stderr!.on('data', (chunk) => (output += chunk))
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`server did not start within ${timeoutMs} ms:\n${output}`))
    }, timeoutMs)
    const onData = () => {
      const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output)
      if (match) {
        clearTimeout(timer)
        child.stdout!.off('data', onData)
        resolve(match[1]!)
      }
    }
    child.stdout!.on('data', onData)
    void exited.then(([code]) => {
      clearTimeout(timer)
      reject(new Error(`server exited with ${code} before listening:\n${output}`))
    })
  })
  return {
    child,
    url,
    output: () => output,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
      const [code] = await exited
      return code
    },
  }
}
