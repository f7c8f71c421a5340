/**
 * The runtimes some tests need beyond the machine's Node 20: Node 22 and 24 and the MCP
 * conformance suite (which needs Node 22), installed from npm into `test/runtimes`, apart from
 * the project so that their `node` never shadows the machine's. A fresh clone has none of them
 * after `npm ci`; `ensureRuntimes()` installs them once, from that folder's lockfile.
 */
import { execFile } from 'node:child_process'
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

export const RUNTIMES_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'runtimes')
/** The conformance suite's command line, run with Node 22. */
export const CONFORMANCE_CLI = join(RUNTIMES_DIR, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js')
/** Two Node binaries of about 120 MB each: minutes on a slow line. */
const INSTALL_TIMEOUT_MS = 10 * 60_000

/** The `node` binary of that major version (present once `ensureRuntimes()` resolved). */
export function nodeBinary(major: 22 | 24): string {
  return join(RUNTIMES_DIR, 'node_modules', `node${major}`, 'bin', 'node')
}

/**
 * Installs the runtimes with `npm ci` unless they are there. Test files run in parallel
 * processes, so one install at a time: the process that creates the lock file installs, the
 * others wait for it to go and find the runtimes there. A lock left by a process that died is
 * taken over.
 */
export function ensureRuntimes(): Promise<void> {
  return installOnce(RUNTIMES_DIR, [nodeBinary(22), nodeBinary(24), CONFORMANCE_CLI])
}

/** `npm ci` in `dir` unless every path of `needed` exists, once however many processes ask at once. */
export async function installOnce(dir: string, needed: readonly string[]): Promise<void> {
  const lock = join(dir, '.install.lock')
  const missing = () => needed.filter((path) => !existsSync(path))
  const deadline = Date.now() + INSTALL_TIMEOUT_MS
  while (missing().length > 0) {
    if (takeLock(lock)) {
      try {
        if (missing().length > 0) await install(dir, missing)
      } finally {
        rmSync(lock, { force: true })
      }
    } else {
      if (Date.now() > deadline) throw new Error(`${dir} was still being installed after ${INSTALL_TIMEOUT_MS / 60_000} minutes (lock ${lock})`)
      await new Promise((done) => setTimeout(done, 500))
    }
  }
}

function takeLock(lock: string): boolean {
  try {
    writeFileSync(lock, String(process.pid), { flag: 'wx' })
    return true
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
  }
  const holder = holderOf(lock)
  // Being written (no pid yet), or held by a live process: wait.
  if (holder === undefined || holder === 'unwritten' || alive(holder)) return false
  // Its holder is gone. Removed only if still that holder's, so that two waiters taking over
  // the same dead lock do not remove the new one that the first of them made meanwhile.
  if (holderOf(lock) === holder) rmSync(lock, { force: true })
  return false
}

/** The pid in the lock file; undefined once it is gone; 'unwritten' for a lock made a moment ago whose pid is not written yet. */
function holderOf(lock: string): number | 'unwritten' | undefined {
  try {
    const pid = Number(readFileSync(lock, 'utf8'))
    if (Number.isInteger(pid) && pid > 0) return pid
    return Date.now() - statSync(lock).mtimeMs < 10_000 ? 'unwritten' : 0
  } catch {
    return undefined
  }
}

function alive(pid: number): boolean {
  if (pid === 0) return false
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

async function install(dir: string, missing: () => string[]): Promise<void> {
  try {
    await promisify(execFile)('npm', ['ci', '--prefix', dir, '--no-audit', '--no-fund'], { timeout: INSTALL_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 })
  } catch (error) {
    const { stderr } = error as { stderr?: string }
    throw new Error(`npm ci --prefix ${dir} failed: ${stderr?.trim().split('\n').slice(-10).join('\n') ?? String(error)}`)
  }
  if (missing().length > 0) throw new Error(`npm ci --prefix ${dir} finished, but ${missing().join(', ')} is missing`)
}
