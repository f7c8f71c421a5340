/**
 * From an instance's launch description and its opened secrets to what actually runs: the argv and
 * environment of a package's process, or the URL and headers of a remote server.
 *
 * Everything is argv: nothing goes through a shell, so a value (secret or not) can never become
 * a command. The runtime is chosen by the registry type, not by the catalogue's `runtime_hint`,
 * so a catalogue entry cannot make the satellite run a program of its choice.
 */
import { existsSync, realpathSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { basename, dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { envNameProblem, identifierProblem, isPep440Version, runtimeArgsProblem, versionProblem } from './runtime-rules.js'
import type { Arg, PackageLaunch, RemoteLaunch } from './types.js'

/** A launch this satellite cannot carry out; the message goes to the instance's status. */
export class LaunchError extends Error {}

export interface ProcessCommand {
  /** The program: an absolute path (this satellite's node) or a runner's name, found on PATH. */
  command: string
  args: string[]
  /** The instance's own variables (launch.env and `env:` secrets); the runner adds HOME, PATH and caches. */
  env: Record<string, string>
  runner: 'node' | 'npx' | 'uvx' | 'docker'
  /** What the program reads beyond the system and its runner: an installed package and the node_modules it resolves from. */
  readOnly: string[]
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

/** The argv entries with every secret slot filled; a slot without a value refuses the launch. */
export function fillArgs(args: readonly Arg[], secrets: Secrets): string[] {
  return args.map((arg) => {
    if (typeof arg === 'string') return arg
    const value = secrets.get(arg.secret)
    if (value === undefined) throw new LaunchError(`no value was sent for the argument ${arg.secret}`)
    return value
  })
}

/** launch.env plus every `env:NAME` secret; a name that changes how code is loaded refuses the launch. */
export function launchEnv(launch: PackageLaunch, secrets: Secrets): Record<string, string> {
  const env: Record<string, string> = { ...launch.env }
  for (const [target, value] of secrets) {
    if (target.startsWith('env:')) env[target.slice(4)] = value
  }
  for (const [name, value] of Object.entries(env)) {
    refuse(envNameProblem(name))
    // The sandbox hands bubblewrap the environment as NUL-separated options: a NUL in a value would start an option of its own.
    if (value.includes('\0')) throw new LaunchError(`the value of ${name} holds a NUL character`)
  }
  return env
}

/**
 * The runner's own options from the catalogue: plain strings from the allow-list only. A secret
 * there is refused without being read, so its value never reaches a message.
 */
export function runtimeArgs(launch: PackageLaunch): string[] {
  const literal = launch.runtime_args.map((arg) => {
    if (typeof arg !== 'string') throw new LaunchError(`the runtime argument ${arg.secret} is a secret; runtime arguments are the runner's options and take none`)
    return arg
  })
  refuse(runtimeArgsProblem(launch.registry_type, literal))
  return literal
}

export interface PackageOptions {
  /** Folders whose node_modules (and their parents') are searched for npm packages. */
  packageDirs: readonly string[]
}

/**
 * The process to start for a package instance. Each runner's options end before the package,
 * so nothing from the catalogue after that point can be read as one:
 * - npx: `--` (npm exec documents `npx -- <pkg>[@<version>] [args...]`);
 * - docker: `--` before the image (its flag parser stops there; what follows the image goes to
 *   the container);
 * - uvx: no `--`. uvx (`uv tool run`) takes the first word that is not one of its options as the
 *   command and hands everything after it to the tool; its documentation shows no `--` before
 *   the command, and the package name is checked to start with a letter or digit, so it cannot
 *   be taken for an option.
 */
export async function packageCommand(launch: PackageLaunch, secrets: Secrets, options: PackageOptions): Promise<ProcessCommand> {
  if (launch.transport.type !== 'stdio') {
    throw new LaunchError(`this satellite runs packages over stdio only (this one speaks ${launch.transport.type})`)
  }
  refuse(identifierProblem(launch.registry_type, launch.identifier))
  refuse(versionProblem(launch.registry_type, launch.version))
  const runnerArgs = runtimeArgs(launch)
  const packageArgs = fillArgs(launch.package_args, secrets)
  const env = launchEnv(launch, secrets)
  const spec = launch.version === null ? launch.identifier : `${launch.identifier}@${launch.version}`
  switch (launch.registry_type) {
    case 'npm': {
      const local = await findLocalPackage(launch.identifier, launch.version, [...options.packageDirs, ownDir()])
      if (local !== undefined) {
        // Run directly: the runtime arguments are npx's options, and node needs none of them.
        return { command: process.execPath, args: [local.bin, ...packageArgs], env, runner: 'node', readOnly: packageReads(local), description: `${launch.identifier}@${local.version} (installed at ${local.dir})` }
      }
      // --yes: nobody is there to answer npx's question whether to install.
      return { command: 'npx', args: ['--yes', ...runnerArgs, '--', spec, ...packageArgs], env, runner: 'npx', readOnly: [], description: `${spec} (through npx)` }
    }
    case 'pypi': {
      // `name@version` takes an exact version only; a specifier goes to --from as a requirement.
      const exact = launch.version === null || isPep440Version(launch.version)
      const target = exact ? [spec] : ['--from', `${launch.identifier}${launch.version}`, launch.identifier]
      return { command: 'uvx', args: [...runnerArgs, ...target, ...packageArgs], env, runner: 'uvx', readOnly: [], description: `${exact ? spec : target[1]} (through uvx)` }
    }
    case 'oci':
    case 'docker': {
      // `-e NAME` without a value passes the variable from docker's own environment, so values
      // stay out of the command line.
      const passEnv = Object.keys(env).flatMap((name) => ['-e', name])
      const image = launch.version === null || hasTag(launch.identifier) ? launch.identifier : `${launch.identifier}${launch.version.startsWith('sha256:') ? '@' : ':'}${launch.version}`
      return { command: 'docker', args: ['run', '--rm', '-i', ...passEnv, ...runnerArgs, '--', image, ...packageArgs], env, runner: 'docker', readOnly: [], description: `${image} (through docker)` }
    }
    default:
      throw new LaunchError(`this satellite cannot run ${launch.registry_type} packages`)
  }
}

function refuse(problem: string | undefined): void {
  if (problem !== undefined) throw new LaunchError(problem)
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
  /** The absolute (real) path of the script its `bin` names. */
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
  return { dir, version: pkg.version, bin: realOrSame(resolve(dir, bin)) }
}

/**
 * What running an installed package reads: its own folder (where it really is, as Node resolves
 * through links) and every node_modules folder Node searches from there for its dependencies.
 * Nothing else of the folder it was found in: a project's `.env` beside node_modules stays unseen.
 */
function packageReads(local: LocalPackage): string[] {
  const own = realOrSame(local.dir)
  const reads = [own]
  for (let dir = dirname(own); ; dir = dirname(dir)) {
    if (basename(dir) !== 'node_modules' && existsSync(join(dir, 'node_modules'))) reads.push(join(dir, 'node_modules'))
    if (dirname(dir) === dir) break
  }
  return reads
}

function realOrSame(path: string): string {
  try {
    return realpathSync(path)
  } catch {
    return path
  }
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
