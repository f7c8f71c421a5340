/**
 * The reference satellite as a real process (`node dist/examples/satellite/src/main.js`, as
 * `npm run satellite` starts it), paired with a registration token, on a free port of 127.0.0.1.
 * Its output is kept, for a failing test to print and for a test to search.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { projectRoot } from '../../src/paths.js'
import { freePort } from './oauth-e2e.js'

/** Built by `npm run build` (`npm test` builds before running vitest). */
export const SATELLITE_ENTRY = join(projectRoot, 'dist/examples/satellite/src/main.js')
export const satelliteBuilt = existsSync(SATELLITE_ENTRY)

export interface SatelliteProcess {
  child: ChildProcess
  /** `http://127.0.0.1:<port>`: its SATELLITE_URL. */
  url: string
  output(): string
  stop(): Promise<void>
}

export async function startSatelliteProcess(options: { backendUrl: string; registrationToken: string; name: string; env?: Record<string, string> }): Promise<SatelliteProcess> {
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  const dir = mkdtempSync(join(tmpdir(), 'sat-proc-'))
  const child = spawn(process.execPath, ['--enable-source-maps', SATELLITE_ENTRY], {
    cwd: dir,
    env: {
      PATH: process.env.PATH ?? '', LANG: process.env.LANG ?? 'C.UTF-8',
      BACKEND_URL: options.backendUrl, REGISTRATION_TOKEN: options.registrationToken, SATELLITE_NAME: options.name,
      HOST: '127.0.0.1', PORT: String(port), SATELLITE_URL: url, STATE_DIR: join(dir, 'state'), PACKAGE_DIRS: projectRoot,
      START_TIMEOUT_SECONDS: '30', ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout!.on('data', (chunk) => (output += chunk))
  child.stderr!.on('data', (chunk) => (output += chunk))
  const exited = once(child, 'exit')
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the satellite did not listen within 20 s:\n${output}`)), 20_000)
    const onData = () => {
      if (!output.includes('listening on')) return
      clearTimeout(timer)
      child.stdout!.off('data', onData)
      child.stderr!.off('data', onData)
      resolve()
    }
    child.stdout!.on('data', onData)
    child.stderr!.on('data', onData)
    void exited.then(() => {
      clearTimeout(timer)
      reject(new Error(`the satellite exited before listening:\n${output}`))
    })
  })
  return {
    child,
    url,
    output: () => output,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM')
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
        await exited
        clearTimeout(timer)
      }
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
