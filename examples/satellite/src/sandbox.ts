/**
 * The bubblewrap command line that runs one instance in a sandbox of its own:
 * - its own user, PID, IPC, UTS and cgroup namespaces: it sees no other process, and runs as an
 *   unprivileged uid without capabilities, which cannot create further namespaces;
 * - its own mount namespace on an empty root: the system (/usr, the /lib links, the few /etc
 *   files a runtime reads) and the package it runs read-only, a fresh /tmp, /proc and /dev, and
 *   its private folder as HOME — nothing else of the host, so never another instance's folder nor
 *   the satellite's state (covered by an empty folder if it lies inside something shown);
 * - no network at all with `network: "none"` (a namespace with only its own loopback);
 * - a new session (no terminal to push keystrokes into), killed with the satellite;
 * - resource limits, set by util-linux prlimit as the first program inside.
 *
 * The environment travels on file descriptor 3 (`--args 3`), not on the command line, which any
 * user of the host can read in `ps`.
 */
import { existsSync, lstatSync, readlinkSync, realpathSync } from 'node:fs'
import { dirname, join, relative, resolve, sep } from 'node:path'

export interface SandboxLimits {
  /**
   * RLIMIT_DATA, in MiB: the memory a process can write to (heap, stacks, buffers). Not
   * RLIMIT_AS: V8 reserves address space it never uses (about 10 GiB per WebAssembly memory), so
   * an address-space limit stops ordinary servers long before they use much memory.
   */
  memoryMb: number
  /** RLIMIT_NOFILE. */
  openFiles: number
  /** RLIMIT_NPROC: processes and threads; counted per sandbox, as each has its own user namespace. */
  processes: number
  /** RLIMIT_FSIZE, in MiB: the largest file a process may write. */
  fileSizeMb: number
  /** The size of its /tmp, in MiB (tmpfs lives in memory). */
  tmpMb: number
}

export const DEFAULT_LIMITS: Readonly<SandboxLimits> = Object.freeze({ memoryMb: 2048, openFiles: 1024, processes: 256, fileSizeMb: 1024, tmpMb: 256 })

/** Where an instance finds its private folder, whatever the host's path of it. */
export const SANDBOX_HOME = '/home/mcp'
/** Inside, every instance is this unprivileged user ("nobody"). */
const INSIDE_ID = '65534'

/** What a runtime reads from /etc: name resolution, certificates, users, the linker's cache. */
const ETC = [
  'resolv.conf', 'hosts', 'host.conf', 'nsswitch.conf', 'gai.conf', 'services', 'protocols', 'passwd', 'group',
  'localtime', 'ssl', 'ca-certificates', 'ca-certificates.conf', 'pki', 'crypto-policies', 'ld.so.cache',
  'ld.so.conf', 'ld.so.conf.d', 'alternatives', 'os-release', 'mime.types',
]
/** Top-level folders of the system that hold programs and libraries (links on a merged /usr). */
const SYSTEM = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32']

export interface SandboxPlan {
  /** The program, an absolute path on the host. */
  command: string
  args: string[]
  /** The whole environment inside. */
  env: Record<string, string>
  /** The instance's private folder on the host, mounted read-write as its HOME. */
  home: string
  /** Host paths the program reads beyond the system (its package, its runner), shown read-only at the same path. */
  readOnly: string[]
  network: 'full' | 'none'
}

export interface SandboxSetup {
  /** util-linux prlimit, an absolute path. */
  prlimit: string
  limits: SandboxLimits
  /** Host folders never shown, even when inside something that is (the satellite's state, the instances' folders). */
  hidden: string[]
}

export interface BubblewrapCall {
  /** bwrap's command line. */
  args: string[]
  /** What bwrap reads from file descriptor 3: NUL-separated options (the environment). */
  fd3: string
}

interface Bind {
  source: string
  target: string
}

export function bubblewrapCall(plan: SandboxPlan, setup: SandboxSetup): BubblewrapCall {
  const args = [
    '--unshare-user', '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try',
    ...(plan.network === 'none' ? ['--unshare-net'] : []),
    '--disable-userns', '--uid', INSIDE_ID, '--gid', INSIDE_ID, '--hostname', 'mcp',
  ]
  const binds: Bind[] = []
  for (const path of SYSTEM) {
    const link = symlinkAt(path)
    if (link !== undefined) args.push('--symlink', link, path)
    else if (existsSync(path)) binds.push({ source: path, target: path })
  }
  for (const name of ETC) if (existsSync(join('/etc', name))) binds.push({ source: join('/etc', name), target: join('/etc', name) })
  for (const path of [nodePrefix(), ...plan.readOnly]) {
    if (!binds.some((bind) => covers(bind, path))) binds.push({ source: path, target: path })
  }
  // Its own /tmp comes first: a package (or node) installed under the host's /tmp is bound on top
  // of it, not hidden by it.
  args.push('--size', String(setup.limits.tmpMb * 1024 * 1024), '--perms', '1777', '--tmpfs', '/tmp')
  for (const bind of binds) args.push('--ro-bind', bind.source, bind.target)
  for (const target of hiddenTargets(binds, setup.hidden)) args.push('--tmpfs', target, '--remount-ro', target)
  args.push(
    '--proc', '/proc',
    '--dev', '/dev',
    '--bind', plan.home, SANDBOX_HOME,
    // The root itself (the folders bwrap made for the mounts above) becomes read-only too.
    '--remount-ro', '/',
    '--chdir', SANDBOX_HOME,
    '--new-session', '--die-with-parent',
    '--clearenv', '--args', '3',
    '--', setup.prlimit, ...limitArgs(setup.limits), '--', plan.command, ...plan.args,
  )
  const options = Object.entries(plan.env).flatMap(([name, value]) => ['--setenv', name, value])
  // Each option ends at a NUL, so one inside a name or value would smuggle in an option (a mount of the host).
  if (options.some((option) => option.includes('\0'))) throw new Error('an environment variable holds a NUL character')
  const fd3 = options.map((option) => `${option}\0`).join('')
  return { args, fd3 }
}

function limitArgs(limits: SandboxLimits): string[] {
  const both = (value: number) => `${value}:${value}`
  const mib = 1024 * 1024
  return [
    `--nofile=${both(limits.openFiles)}`,
    `--nproc=${both(limits.processes)}`,
    `--data=${both(limits.memoryMb * mib)}`,
    `--fsize=${both(limits.fileSizeMb * mib)}`,
    '--core=0:0',
  ]
}

/** The target of `path` when it is a symbolic link (`/lib` → `usr/lib`), to recreate inside. */
function symlinkAt(path: string): string | undefined {
  try {
    return lstatSync(path).isSymbolicLink() ? readlinkSync(path) : undefined
  } catch {
    return undefined
  }
}

/** The installation this node runs from (`/usr`, `/opt/node-v20`): node, npm and npx live there. */
function nodePrefix(): string {
  return dirname(dirname(realpathSync(process.execPath)))
}

/** Whether `path` is shown by `bind` (it is the bound folder or inside it), comparing real paths. */
function covers(bind: Bind, path: string): boolean {
  return inside(real(bind.source), real(path))
}

/**
 * Where each hidden folder would appear inside: a bind shows its source's real contents at its
 * target, so a hidden folder under a source shows under the target.
 */
function hiddenTargets(binds: readonly Bind[], hidden: readonly string[]): string[] {
  const targets = new Set<string>()
  for (const path of hidden) {
    if (!existsSync(path)) continue
    const hiddenReal = real(path)
    for (const bind of binds) {
      const sourceReal = real(bind.source)
      if (inside(sourceReal, hiddenReal)) targets.add(join(bind.target, relative(sourceReal, hiddenReal)))
    }
  }
  return [...targets]
}

function inside(parent: string, child: string): boolean {
  return child === parent || child.startsWith(parent.endsWith(sep) ? parent : `${parent}${sep}`)
}

function real(path: string): string {
  try {
    return realpathSync(path)
  } catch {
    return resolve(path)
  }
}
