/**
 * The satellite's settings, all from environment variables (see the README of this folder).
 */
import { hostname, homedir } from 'node:os'
import { join, resolve } from 'node:path'
import { DEFAULT_SESSION_LIMITS, type SessionLimits } from './front.js'
import { defaultIsolationSettings, type IsolationSettings } from './isolation.js'
import type { SandboxLimits } from './sandbox.js'

export interface SatelliteConfig {
  /** The backend's base URL, without a trailing slash. */
  backendUrl: string
  /** Spent on the first start; not needed once STATE_DIR holds a pairing. */
  registrationToken: string | undefined
  name: string
  host: string
  /** 0: any free port. */
  port: number
  /** Where clients reach this satellite; default `http://127.0.0.1:<port>`. No trailing slash. */
  satelliteUrl: string | undefined
  /** Where the pairing (id, API key, key pair) is kept; undefined: in memory only. */
  stateDir: string | undefined
  /** Folders whose node_modules are searched for npm packages before falling back to npx. */
  packageDirs: string[]
  /** How long a server may take to start and answer `initialize`. */
  startTimeoutMs: number
  /** ROTATE_KEY=1: replace the key pair once paired (proving the current one to the backend). */
  rotateKey?: boolean
  /** How instances are kept apart; absent: a process sandbox with the defaults. */
  isolation?: IsolationSettings
  /**
   * EGRESS_ALLOWED_HOSTS: hosts (`host`, or `host:port` for one port) that remote targets may reach
   * on a satellite shared by several teams whatever they resolve to; lower case, IPv6 in brackets.
   * Absent: none.
   */
  egressAllowedHosts?: string[]
  /**
   * SESSION_IDLE_SECONDS (default 600) and MAX_SESSIONS_PER_INSTANCE (default 100): each client
   * session has its own upstream session (a process, for a package); these bound them.
   */
  sessions?: SessionLimits
}

const NAME = /^[a-z0-9][a-z0-9_-]{2,63}$/

export class ConfigError extends Error {}

/** The settings from `env`; throws ConfigError with a sentence a person can act on. */
export function configFromEnv(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): SatelliteConfig {
  const backendUrl = trimSlash(required(env, 'BACKEND_URL'))
  if (!/^https?:\/\//.test(backendUrl)) throw new ConfigError('BACKEND_URL must be an http(s) URL, e.g. http://localhost:3000')
  const name = env.SATELLITE_NAME?.trim() || defaultName()
  if (!NAME.test(name)) throw new ConfigError(`SATELLITE_NAME must be 3–64 characters of a-z, 0-9, "_" and "-", starting with a letter or digit (got "${name}")`)
  const port = env.PORT === undefined || env.PORT === '' ? 3001 : Number(env.PORT)
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ConfigError('PORT must be a port number (0 picks a free one)')
  const satelliteUrl = env.SATELLITE_URL?.trim() ? trimSlash(env.SATELLITE_URL.trim()) : undefined
  if (satelliteUrl !== undefined && !/^https?:\/\//.test(satelliteUrl)) throw new ConfigError('SATELLITE_URL must be an http(s) URL')
  const stateDir = env.STATE_DIR === undefined ? join(homedir(), '.mcp-satellite', name) : env.STATE_DIR === '' ? undefined : resolve(cwd, env.STATE_DIR)
  const startTimeout = env.START_TIMEOUT_SECONDS === undefined ? 120 : Number(env.START_TIMEOUT_SECONDS)
  if (!(startTimeout > 0)) throw new ConfigError('START_TIMEOUT_SECONDS must be a positive number')
  return {
    backendUrl,
    registrationToken: env.REGISTRATION_TOKEN?.trim() || undefined,
    name,
    host: env.HOST?.trim() || '127.0.0.1',
    port,
    satelliteUrl,
    stateDir,
    packageDirs: (env.PACKAGE_DIRS ?? cwd).split(':').filter((dir) => dir !== '').map((dir) => resolve(cwd, dir)),
    startTimeoutMs: startTimeout * 1000,
    egressAllowedHosts: allowedHosts(env.EGRESS_ALLOWED_HOSTS ?? ''),
    rotateKey: env.ROTATE_KEY === '1' || env.ROTATE_KEY?.toLowerCase() === 'true',
    isolation: isolationFromEnv(env, cwd, stateDir),
    sessions: {
      idleMs: whole(env, 'SESSION_IDLE_SECONDS', DEFAULT_SESSION_LIMITS.idleMs / 1000) * 1000,
      perInstance: whole(env, 'MAX_SESSIONS_PER_INSTANCE', DEFAULT_SESSION_LIMITS.perInstance),
    },
  }
}

const HOST_ENTRY = /^(\[[0-9a-f:.]+\]|[a-z0-9_.-]+)(?::([0-9]{1,5}))?$/

/** `host[:port]` entries, the host written as URLs write it (so `127.1` is `127.0.0.1`, `[::0001]` is `[::1]`). */
function allowedHosts(text: string): string[] {
  return text.split(',').map((entry) => entry.trim().toLowerCase()).filter((entry) => entry !== '').map((entry) => {
    const match = HOST_ENTRY.exec(entry)
    const port = match?.[2] === undefined ? undefined : Number(match[2])
    let host: string | undefined
    try {
      host = match === null ? undefined : new URL(`http://${match[1]}/`).hostname
    } catch {
      host = undefined
    }
    if (host === undefined || (port !== undefined && (port < 1 || port > 65535))) {
      throw new ConfigError(`EGRESS_ALLOWED_HOSTS must be a comma-separated list of host or host:port (IPv6 in brackets), e.g. mcp.internal.example,10.0.0.5:8443 (got "${entry}")`)
    }
    return port === undefined ? host : `${host}:${port}`
  })
}

/** ISOLATION, BWRAP_PATH, INSTANCES_DIR and the SANDBOX_* limits. */
function isolationFromEnv(env: NodeJS.ProcessEnv, cwd: string, stateDir: string | undefined): IsolationSettings {
  const defaults = defaultIsolationSettings()
  const mode = env.ISOLATION?.trim() || 'process-sandbox'
  if (mode !== 'process-sandbox' && mode !== 'none') throw new ConfigError('ISOLATION must be process-sandbox (the default) or none')
  const limits: SandboxLimits = {
    memoryMb: whole(env, 'SANDBOX_MEMORY_MB', defaults.limits.memoryMb),
    openFiles: whole(env, 'SANDBOX_OPEN_FILES', defaults.limits.openFiles),
    processes: whole(env, 'SANDBOX_PROCESSES', defaults.limits.processes),
    fileSizeMb: whole(env, 'SANDBOX_FILE_SIZE_MB', defaults.limits.fileSizeMb),
    tmpMb: whole(env, 'SANDBOX_TMP_MB', defaults.limits.tmpMb),
  }
  return {
    mode,
    bwrapPath: env.BWRAP_PATH?.trim() || defaults.bwrapPath,
    instancesDir: env.INSTANCES_DIR?.trim() ? resolve(cwd, env.INSTANCES_DIR.trim()) : undefined,
    sandboxUser: { uid: whole(env, 'SANDBOX_UID', defaults.sandboxUser.uid), gid: whole(env, 'SANDBOX_GID', defaults.sandboxUser.gid) },
    limits,
    hidden: stateDir === undefined ? [] : [stateDir],
  }
}

/** A positive whole number from `key`, or `fallback` when unset. */
function whole(env: NodeJS.ProcessEnv, key: string, fallback: number): number {
  const text = env[key]?.trim()
  if (text === undefined || text === '') return fallback
  const value = Number(text)
  if (!Number.isInteger(value) || value <= 0) throw new ConfigError(`${key} must be a positive whole number`)
  return value
}

function required(env: NodeJS.ProcessEnv, key: string): string {
  const value = env[key]?.trim()
  if (!value) throw new ConfigError(`${key} is required`)
  return value
}

function trimSlash(url: string): string {
  return url.replace(/\/+$/, '')
}

/** `sat-<host name>` reduced to the characters a satellite name may hold. */
function defaultName(): string {
  const host = hostname().toLowerCase().replace(/[^a-z0-9_-]+/g, '-').replace(/^-+|-+$/g, '')
  return `sat-${host || 'local'}`.slice(0, 64)
}
