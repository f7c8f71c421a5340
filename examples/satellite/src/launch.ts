/**
 * From an instance's launch description and its opened secrets to what actually runs: the argv and
 * environment of a package's process, or the URL and headers of a remote server.
 *
 * Everything is argv: nothing goes through a shell, so a value (secret or not) can never become
 * a command. The runtime is chosen by the registry type, not by the catalogue's `runtime_hint`,
 * so a catalogue entry cannot make the satellite run a program of its choice.
 */
import { existsSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Arg, PackageLaunch, RemoteLaunch } from './types.js'

/** A launch this satellite cannot carry out; the message goes to the instance's status. */
export class LaunchError extends Error {}

export interface ProcessCommand {
  command: string
  args: string[]
  /** The variables given to the process on top of the minimal base environment. */
  env: Record<string, string>
  /** What to show in logs: the package and how it was found, never an argument value. */
  description: string
}

export interface RemoteTarget {
  url: string
  transport: 'streamable-http' | 'sse'
  headers: Record<string, string>
}

/** Opened secrets, target → value (`env:NAME`, `arg:key`, `header:Name`, `urlvar:name`). */
export type Secrets = ReadonlyMap<string, string>

/** The variables every child gets from the satellite's own environment, and nothing else. */
const BASE_ENV = ['PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'TERM', 'LANG', 'TMPDIR', 'SystemRoot', 'APPDATA', 'LOCALAPPDATA', 'USERPROFILE'] as const

export function baseEnv(source: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const env: Record<string, string> = {}
  for (const key of BASE_ENV) {
    const value = source[key]
    if (value !== undefined) env[key] = value
  }
  return env
}

/** The argv entries with every secret slot filled; a slot without a value refuses the launch. */
export function fillArgs(args: readonly Arg[], secrets: Secrets): string[] {
  return args.map((arg) => {
    if (typeof arg === 'string') return arg
    const value = secrets.get(arg.secret)
    if (value === undefined) throw new LaunchError(`no value was sent for the argument ${arg.secret}`)
    return value
  })
}

/** launch.env plus every `env:NAME` secret. */
export function launchEnv(launch: PackageLaunch, secrets: Secrets): Record<string, string> {
  const env: Record<string, string> = { ...launch.env }
  for (const [target, value] of secrets) {
    if (target.startsWith('env:')) env[target.slice(4)] = value
  }
  return env
}

export interface PackageOptions {
  /** Folders whose node_modules (and their parents') are searched for npm packages. */
  packageDirs: readonly string[]
}

/** The process to start for a package instance. */
export async function packageCommand(launch: PackageLaunch, secrets: Secrets, options: PackageOptions): Promise<ProcessCommand> {
  if (launch.transport.type !== 'stdio') {
    throw new LaunchError(`this satellite runs packages over stdio only (this one speaks ${launch.transport.type})`)
  }
  const runtimeArgs = fillArgs(launch.runtime_args, secrets)
  const packageArgs = fillArgs(launch.package_args, secrets)
  const env = launchEnv(launch, secrets)
  const spec = launch.version === null ? launch.identifier : `${launch.identifier}@${launch.version}`
  switch (launch.registry_type) {
    case 'npm': {
      const local = await findLocalPackage(launch.identifier, launch.version, [...options.packageDirs, ownDir()])
      if (local !== undefined) {
        // The runtime arguments are npx's options; run directly, node needs none of them.
        return { command: process.execPath, args: [local.bin, ...packageArgs], env, description: `${launch.identifier}@${local.version} (installed at ${local.dir})` }
      }
      const yes = runtimeArgs.some((arg) => arg === '-y' || arg === '--yes') ? [] : ['--yes']
      return { command: 'npx', args: [...yes, ...runtimeArgs, spec, ...packageArgs], env, description: `${spec} (through npx)` }
    }
    case 'pypi':
      return { command: 'uvx', args: [...runtimeArgs, spec, ...packageArgs], env, description: `${spec} (through uvx)` }
    case 'oci':
    case 'docker': {
      // `-e NAME` without a value passes the variable from docker's own environment, so values
      // stay out of the command line.
      const passEnv = Object.keys(env).flatMap((name) => ['-e', name])
      const image = launch.version === null || hasTag(launch.identifier) ? launch.identifier : `${launch.identifier}:${launch.version}`
      return { command: 'docker', args: ['run', '--rm', '-i', ...passEnv, ...runtimeArgs, image, ...packageArgs], env, description: `${image} (through docker)` }
    }
    default:
      throw new LaunchError(`this satellite cannot run ${launch.registry_type} packages`)
  }
}

/** The URL and headers of a remote server, with `header:` and `urlvar:` secrets applied. */
export function remoteTarget(launch: RemoteLaunch, secrets: Secrets): RemoteTarget {
  const headers: Record<string, string> = { ...launch.headers }
  let url = launch.url
  for (const [target, value] of secrets) {
    if (target.startsWith('header:')) headers[target.slice(7)] = value
    else if (target.startsWith('urlvar:')) url = url.split(`{${target.slice(7)}}`).join(encodeURIComponent(value))
  }
  const left = /\{([A-Za-z0-9_.-]+)\}/.exec(url)
  if (left !== null) throw new LaunchError(`no value was sent for the URL variable ${left[1]}`)
  return { url, transport: launch.transport, headers }
}

export interface LocalPackage {
  dir: string
  version: string
  /** The absolute path of the script its `bin` names. */
  bin: string
}

/**
 * An npm package already installed under one of `bases` (or a parent of one, as Node resolves),
 * at `version` when one is asked. Running it needs no download, which is also how the tests run
 * real servers without a network.
 */
export async function findLocalPackage(identifier: string, version: string | null, bases: readonly string[]): Promise<LocalPackage | undefined> {
  if (!/^(@[a-z0-9][\w.-]*\/)?[a-z0-9][\w.-]*$/i.test(identifier)) return undefined
  const seen = new Set<string>()
  for (const base of bases) {
    for (let dir = resolve(base); ; dir = dirname(dir)) {
      const candidate = join(dir, 'node_modules', identifier)
      if (!seen.has(candidate)) {
        seen.add(candidate)
        const found = await readPackage(candidate, identifier)
        if (found !== undefined && (version === null || found.version === version)) return found
      }
      if (dirname(dir) === dir) break
    }
  }
  return undefined
}

async function readPackage(dir: string, identifier: string): Promise<LocalPackage | undefined> {
  const manifest = join(dir, 'package.json')
  if (!existsSync(manifest)) return undefined
  const pkg = JSON.parse(await readFile(manifest, 'utf8')) as { version?: string; bin?: string | Record<string, string> }
  const bin = binOf(pkg.bin, identifier)
  if (bin === undefined || typeof pkg.version !== 'string') return undefined
  return { dir, version: pkg.version, bin: resolve(dir, bin) }
}

/** The script a package runs as: its only bin, or the one named like the package. */
function binOf(bin: string | Record<string, string> | undefined, identifier: string): string | undefined {
  if (typeof bin === 'string') return bin
  if (bin === undefined) return undefined
  const entries = Object.entries(bin)
  if (entries.length === 1) return entries[0]![1]
  const bare = identifier.replace(/^@[^/]+\//, '')
  return bin[bare] ?? entries[0]?.[1]
}

function hasTag(image: string): boolean {
  const last = image.slice(image.lastIndexOf('/') + 1)
  return last.includes(':') || last.includes('@')
}

/** The folder of this module: a copy of the satellite with its own node_modules finds them from here. */
function ownDir(): string {
  return dirname(fileURLToPath(import.meta.url))
}
