/**
 * What a catalogue entry may make this satellite run, checked again here before anything starts
 * (the backend refuses the same in entries and values; this copy is the last line if it did not):
 * no environment variable that changes how a runtime loads code, a version and an identifier
 * that are what their registry type calls a version and a package, and only the runner options
 * known to be harmless.
 *
 * Each check answers the problem as a sentence, or undefined when there is none.
 */
import semver from 'semver'

/**
 * Names that make node, npm, Python, uv, the dynamic linker, a shell or git load code or change
 * where it is found (`NODE_OPTIONS=--import=data:…` runs any code in any Node server). Kept
 * identical to the backend's list; a test compares the two.
 */
export const LOADER_ENV =
  /^(NODE_OPTIONS|NODE_PATH|NODE_REPL_EXTERNAL_MODULE|NODE_ICU_DATA|PATH|HOME|SHELL|ENV|BASH_ENV|LD_.*|DYLD_.*|npm_config_.*|NPM_CONFIG_.*|PYTHON.*|UV_.*|PIP_.*|DOCKER_.*|PERL5.*|RUBY.*|JAVA_TOOL_OPTIONS|_JAVA_OPTIONS|JDK_JAVA_OPTIONS|GIT_.*|XDG_.*|TMPDIR|COREPACK_.*|BUN_.*|DENO_.*|GCONV_PATH|LOCPATH|MALLOC_.*)$/i

export function envNameProblem(name: string): string | undefined {
  if (LOADER_ENV.test(name)) return `the environment variable ${name} changes how the runtime loads code, so this satellite does not set it`
  // spawn() cannot pass such a name, and a name with "=" would set another variable.
  if (name === '' || name.includes('=') || name.includes('\0')) return `"${name}" is not an environment variable name`
  return undefined
}

export type RegistryType = 'npm' | 'pypi' | 'oci' | 'docker' | 'nuget' | 'mcpb'

const NPM_NAME = /^(@[a-z0-9][a-z0-9._~-]*\/)?[a-z0-9][a-z0-9._~-]*$/
const PYPI_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/
/** registry/namespace/name with an optional :tag or @digest; no whitespace, quotes or options. */
const IMAGE = /^[A-Za-z0-9][A-Za-z0-9._\/:@-]{0,254}$/
/** A dist-tag npm resolves (`latest`, `next`); never a path, URL, git spec or alias, which all hold "/" or ":". */
const NPM_TAG = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/
const DOCKER_TAG = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/
const DOCKER_DIGEST = /^sha256:[a-f0-9]{64}$/

/** PEP 440 public version with an optional local label, as the PEP's appendix spells it. */
const PEP440 = String.raw`v?(?:[0-9]+!)?[0-9]+(?:\.[0-9]+)*(?:[-_.]?(?:a|b|c|rc|alpha|beta|pre|preview)[-_.]?[0-9]*)?(?:-[0-9]+|[-_.]?(?:post|rev|r)[-_.]?[0-9]*)?(?:[-_.]?dev[-_.]?[0-9]*)?(?:\+[a-z0-9]+(?:[-_.][a-z0-9]+)*)?`
const PEP440_VERSION = new RegExp(`^${PEP440}$`, 'i')
/**
 * One clause of a PEP 440 specifier. `===` (arbitrary string equality) is left out: it matches
 * any text, which is what the other rules are here to refuse.
 */
const PEP440_CLAUSE = new RegExp(`^\\s*(?:~=|==|!=|<=|>=|<|>)\\s*${PEP440}(?:\\.\\*)?\\s*$`, 'i')

export function identifierProblem(type: RegistryType, identifier: string): string | undefined {
  const valid = type === 'npm' ? NPM_NAME.test(identifier)
    : type === 'pypi' ? PYPI_NAME.test(identifier)
    : type === 'oci' || type === 'docker' ? IMAGE.test(identifier) && !identifier.includes('..')
    : true
  return valid ? undefined : `"${identifier}" is not a valid ${type} package name`
}

export function versionProblem(type: RegistryType, version: string | null): string | undefined {
  if (version === null) return undefined
  const refused = `the version "${version}" is not a valid ${type} version`
  switch (type) {
    case 'npm':
      // validRange takes exact versions too, and refuses file:, link:, URLs, git specs and aliases.
      return semver.validRange(version) !== null || NPM_TAG.test(version) ? undefined : refused
    case 'pypi':
      return isPep440Version(version) || isPep440Specifier(version) ? undefined : refused
    case 'oci':
    case 'docker':
      return DOCKER_TAG.test(version) || DOCKER_DIGEST.test(version) ? undefined : refused
    default:
      return undefined
  }
}

export function isPep440Version(version: string): boolean {
  return PEP440_VERSION.test(version)
}

function isPep440Specifier(version: string): boolean {
  return version.split(',').every((clause) => PEP440_CLAUSE.test(clause))
}

/**
 * The runner options a catalogue entry may ask for, per registry type: each quiets the runner or
 * chooses a Python version, none loads code or changes where packages come from. npx, uvx and
 * docker take many more (npx `--node-options`, `--prefix`; uvx `--with`, `--index-url`; docker
 * `--privileged`, `-v`), any of which would let an entry run something else or reach the host.
 */
const ALLOWED_FLAGS: Partial<Record<RegistryType, ReadonlySet<string>>> = {
  npm: new Set(['-y', '--yes', '--quiet', '-q']),
  pypi: new Set(['--quiet', '-q', '--no-progress']),
}
const PYTHON_VERSION = /^3\.[0-9]{1,2}$/

/** The first runtime argument outside the allow-list, described, or undefined when all are allowed. */
export function runtimeArgsProblem(type: RegistryType, args: readonly string[]): string | undefined {
  const flags = ALLOWED_FLAGS[type] ?? new Set<string>()
  for (let index = 0; index < args.length; index += 1) {
    const arg = args[index]!
    if (flags.has(arg)) continue
    if (type === 'pypi' && arg === '--python' && PYTHON_VERSION.test(args[index + 1] ?? '')) {
      index += 1
      continue
    }
    if (type === 'pypi' && arg.startsWith('--python=') && PYTHON_VERSION.test(arg.slice('--python='.length))) continue
    return `the runtime argument "${arg}" is not one this satellite passes to ${type} packages`
  }
  return undefined
}
