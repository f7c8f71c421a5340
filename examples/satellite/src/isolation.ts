/**
 * How this satellite keeps instances apart: each in a bubblewrap sandbox (`process-sandbox`, the
 * default), or bare (`none`, which an operator chooses for a machine without bubblewrap, and which
 * the satellite then advertises). Either way each instance gets its own HOME and package caches.
 *
 * With `process-sandbox` chosen, the sandbox is tried once at start; when it cannot run, every
 * instance is refused with the reason — never run bare instead.
 */
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import type { ChildSpawn } from './child-transport.js'
import { InstanceDirs, type Owner } from './instance-dirs.js'
import { LaunchError, type ProcessCommand } from './launch.js'
import { companionsOf, findExecutable, findNpx } from './runtimes.js'
import { bubblewrapCall, DEFAULT_LIMITS, SANDBOX_HOME, type SandboxLimits, type SandboxPlan, type SandboxSetup } from './sandbox.js'

export type IsolationMode = 'process-sandbox' | 'none'

export interface IsolationSettings {
  mode: IsolationMode
  /** `bwrap` (found on PATH) or a path. */
  bwrapPath: string
  /** Where the instances' private folders go; undefined: a fresh temporary folder. */
  instancesDir: string | undefined
  /** The user bwrap runs as when the satellite runs as root; otherwise bwrap runs as the satellite's own user. */
  sandboxUser: Owner
  limits: SandboxLimits
  /** Folders never shown to an instance: the satellite's state. */
  hidden: string[]
}

export function defaultIsolationSettings(): IsolationSettings {
  return { mode: 'process-sandbox', bwrapPath: 'bwrap', instancesDir: undefined, sandboxUser: { uid: 65534, gid: 65534 }, limits: { ...DEFAULT_LIMITS }, hidden: [] }
}

/** The variables every bare child gets from the satellite's own environment, and nothing else. */
const BASE_ENV = ['PATH', 'USER', 'LOGNAME', 'TERM', 'LANG', 'TMPDIR', 'SystemRoot', 'APPDATA', 'LOCALAPPDATA', 'USERPROFILE'] as const
/** Inside a sandbox: its own user, /tmp and HOME, so only these carry over. */
const SANDBOX_BASE_ENV = ['PATH', 'TERM', 'LANG'] as const

const PROBE_TIMEOUT_MS = 15_000

interface SandboxTools {
  bwrap: string
  prlimit: string
}

export class Isolation {
  private constructor(
    readonly settings: IsolationSettings,
    private readonly dirs: InstanceDirs,
    /** Why no sandbox can start; set only when one was asked for. */
    readonly problem: string | undefined,
    private readonly tools: SandboxTools | undefined,
  ) {}

  /** Opens the instances' folder and, for a sandbox, checks that one really starts. */
  static async start(settings: IsolationSettings): Promise<Isolation> {
    const dirs = await InstanceDirs.open(settings.instancesDir, settings.mode === 'process-sandbox' ? sandboxOwner(settings) : undefined)
    if (settings.mode === 'none') return new Isolation(settings, dirs, undefined, undefined)
    const bwrap = findExecutable(settings.bwrapPath)
    const prlimit = findExecutable('prlimit')
    const failed = bwrap === undefined ? `${settings.bwrapPath} was not found`
      : prlimit === undefined ? 'prlimit (util-linux) was not found'
      : await probe(new Isolation(settings, dirs, undefined, { bwrap, prlimit }))
    if (failed === undefined) return new Isolation(settings, dirs, undefined, { bwrap: bwrap!, prlimit: prlimit! })
    return new Isolation(settings, dirs, `no sandbox: bubblewrap could not start (${failed}); install bubblewrap or set ISOLATION=none`, undefined)
  }

  private static shared: Promise<Isolation> | undefined

  /** A sandbox with the default settings, for instances run without a satellite around them (tests, tools). */
  static default(): Promise<Isolation> {
    Isolation.shared ??= Isolation.start(defaultIsolationSettings()).then((isolation) => {
      process.once('exit', () => isolation.closeNow())
      return isolation
    })
    return Isolation.shared
  }

  /** What this satellite enforces, as it advertises it: a broken sandbox enforces nothing. */
  get enforced(): IsolationMode {
    return this.settings.mode === 'process-sandbox' && this.problem === undefined ? 'process-sandbox' : 'none'
  }

  /**
   * The runners this satellite can start packages with. Docker only bare: inside a sandbox it
   * would need the host's docker socket, which is the whole machine.
   */
  get runtimes(): string[] {
    if (this.problem !== undefined) return []
    const found = ['node']
    if (findNpx() !== undefined) found.push('npx')
    if (findExecutable('uvx') !== undefined) found.push('uvx')
    if (this.settings.mode === 'none' && findExecutable('docker') !== undefined) found.push('docker')
    return found
  }

  /** The host path of an instance's private folder (whether or not it exists yet). */
  homeOf(instanceId: string): string {
    return this.dirs.pathOf(instanceId)
  }

  /** How to start `command` for an instance: in its sandbox, or bare; LaunchError when it may not run here. */
  async child(command: ProcessCommand, instanceId: string, network: 'full' | 'none'): Promise<ChildSpawn> {
    if (this.problem !== undefined) throw new LaunchError(this.problem)
    if (this.tools === undefined) {
      if (network === 'none') throw new LaunchError('network "none" needs the process sandbox, and this satellite runs with ISOLATION=none')
      const home = await this.dirs.make(instanceId)
      return { command: command.command, args: command.args, env: { ...pick(process.env, BASE_ENV), ...command.env, ...cacheEnv(home) }, cwd: home }
    }
    if (command.runner === 'docker') throw new LaunchError('this satellite runs no containers: docker in its process sandbox would need the host\'s docker socket, which gives the whole machine')
    const program = findExecutable(command.command)
    if (program === undefined) throw new LaunchError(`${command.command} is not installed on this satellite`)
    return this.sandboxed({
      command: program,
      args: command.args,
      env: { ...pick(process.env, SANDBOX_BASE_ENV), ...command.env, ...cacheEnv(SANDBOX_HOME) },
      home: await this.dirs.make(instanceId),
      readOnly: [...command.readOnly, program, ...companionsOf(program)],
      network,
    })
  }

  /** Removes an instance's private folder (the instance left this satellite). */
  async release(instanceId: string): Promise<void> {
    await this.dirs.remove(instanceId)
  }

  async close(): Promise<void> {
    await this.dirs.close()
  }

  closeNow(): void {
    this.dirs.closeNow()
  }

  /** bwrap, as the unprivileged user when the satellite is root, with the plan's call. */
  sandboxed(plan: SandboxPlan): ChildSpawn {
    if (this.tools === undefined) throw new Error('no sandbox')
    const setup: SandboxSetup = { prlimit: this.tools.prlimit, limits: this.settings.limits, hidden: [...this.settings.hidden, this.dirs.root] }
    const call = bubblewrapCall(plan, setup)
    const owner = sandboxOwner(this.settings)
    return { command: this.tools.bwrap, args: call.args, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, fd3: call.fd3, ...owner }
  }

  /** For the start-up check: a private folder of its own. */
  makeHome(id: string): Promise<string> {
    return this.dirs.make(id)
  }
}

/** The user bwrap runs as: the configured unprivileged one when the satellite is root, else the satellite's own. */
function sandboxOwner(settings: IsolationSettings): Owner | undefined {
  return process.getuid?.() === 0 ? settings.sandboxUser : undefined
}

/** Starts node in a sandbox as an instance would run, and has it write to its HOME: the failure, if any. */
async function probe(isolation: Isolation): Promise<string | undefined> {
  const id = `probe-${process.pid}`
  try {
    const home = await isolation.makeHome(id)
    const child = isolation.sandboxed({
      command: process.execPath,
      args: ['-e', `require('fs').writeFileSync(${JSON.stringify(`${SANDBOX_HOME}/probe`)}, 'ok')`],
      env: cacheEnv(SANDBOX_HOME),
      home,
      readOnly: [],
      network: 'full',
    })
    const failed = await runToEnd(child, PROBE_TIMEOUT_MS)
    if (failed !== undefined) return failed
    return existsSync(join(home, 'probe')) ? undefined : 'the sandboxed process could not write to its HOME'
  } catch (error) {
    return error instanceof Error ? error.message : String(error)
  } finally {
    await isolation.release(id).catch(() => undefined)
  }
}

/** HOME and the caches npm, uv and XDG tools write to, all inside the instance's own folder. */
function cacheEnv(home: string): Record<string, string> {
  return { HOME: home, npm_config_cache: join(home, '.npm'), UV_CACHE_DIR: join(home, '.cache', 'uv'), XDG_CACHE_HOME: join(home, '.cache') }
}

function pick(source: NodeJS.ProcessEnv, keys: readonly string[]): Record<string, string> {
  const env: Record<string, string> = {}
  for (const key of keys) {
    const value = source[key]
    if (value !== undefined) env[key] = value
  }
  return env
}

/** Runs `child` to its end: undefined when it exited 0, else what went wrong (its last stderr line). */
function runToEnd(child: ChildSpawn, timeoutMs: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const started = spawn(child.command, child.args, {
      env: child.env,
      stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
      ...(child.uid === undefined ? {} : { uid: child.uid, gid: child.gid }),
      timeout: timeoutMs,
      killSignal: 'SIGKILL',
    })
    let stderr = ''
    started.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-2000)))
    const fd3 = started.stdio[3] as NodeJS.WritableStream | null
    fd3?.on('error', () => undefined)
    fd3?.end(child.fd3 ?? '')
    started.once('error', (error: NodeJS.ErrnoException) => resolve(`${child.command}: ${error.code ?? error.message}`))
    started.once('close', (code, signal) => {
      if (code === 0) return resolve(undefined)
      const last = stderr.trim().split('\n').pop()?.trim()
      resolve(last || (signal !== null ? `ended by ${signal}` : `exit code ${code}`))
    })
  })
}
