import semver from 'semver'

/**
 * What a catalogue entry may make a satellite do: run the named package of its registry and
 * nothing else. Pure checks of single values, shared by the catalogue's writes, the registry
 * import, the installations' derivation and the document builder. The reference satellite keeps
 * its own copy of these lists (examples/satellite/src/runtime-rules.ts) and checks again before it
 * runs anything; a test keeps the two in step.
 *
 * Each check answers null when the value may be used, else a sentence saying why not.
 */

/**
 * Environment variables that change how a runtime finds or loads code, where it installs or caches
 * packages, or what it believes the machine to be. Any one of them turns "run package X" into
 * "run whatever the entry points at": `NODE_OPTIONS=--require=/tmp/x.js`, `LD_PRELOAD`,
 * `npm_config_registry=https://evil`, `PYTHONPATH`, `UV_INDEX_URL`, `PIP_INDEX_URL`,
 * `DOCKER_HOST`, a `PATH` that finds another `node`, a `HOME` with another `.npmrc`.
 * Compared case-insensitively: on Windows names are, and npm reads `npm_config_*` in any case.
 */
export const LOADER_CHANGING_ENV = /^(NODE_OPTIONS|NODE_PATH|NODE_REPL_EXTERNAL_MODULE|NODE_ICU_DATA|PATH|HOME|SHELL|ENV|BASH_ENV|LD_.*|DYLD_.*|npm_config_.*|NPM_CONFIG_.*|PYTHON.*|UV_.*|PIP_.*|DOCKER_.*|PERL5.*|RUBY.*|JAVA_TOOL_OPTIONS|_JAVA_OPTIONS|JDK_JAVA_OPTIONS|GIT_.*|XDG_.*|TMPDIR|COREPACK_.*|BUN_.*|DENO_.*|GCONV_PATH|LOCPATH|MALLOC_.*)$/i

export function envNameProblem(name: string): string | null {
  return LOADER_CHANGING_ENV.test(name)
    ? `${JSON.stringify(name.slice(0, 128))} changes how the runtime loads code or packages; an entry may not set it`
    : null
}

/** The environment name of an input key (`env:NAME`, or `env:NAME{part}` for a part of its template); null for other keys. */
export function envNameOfKey(key: string): string | null {
  if (!key.startsWith('env:')) return null
  const brace = key.indexOf('{')
  return key.slice(4, brace === -1 ? undefined : brace)
}

/**
 * PEP 440 (its appendix's permissive pattern, which also admits the spellings it normalizes:
 * `1.0-alpha.1`, `1.0.post1`, `v1.0`), case-insensitive. No local segment on a specifier other
 * than `==` / `!=` matters here: the index refuses what it does not understand, harmlessly.
 */
const PEP440_VERSION = 'v?(?:[0-9]+!)?[0-9]+(?:\\.[0-9]+)*(?:[-_.]?(?:a|b|c|rc|alpha|beta|pre|preview)[-_.]?[0-9]*)?' +
  '(?:-[0-9]+|[-_.]?(?:post|rev|r)[-_.]?[0-9]*)?(?:[-_.]?dev[-_.]?[0-9]*)?(?:\\+[a-z0-9]+(?:[-_.][a-z0-9]+)*)?'
const PEP440_BARE = new RegExp(`^${PEP440_VERSION}$`, 'i')
/**
 * One clause of a PEP 440 specifier. `===` (arbitrary equality) is left out: it compares any
 * string, which is not "a version". `.*` only after `==` and `!=`, as the PEP allows.
 */
const PEP440_CLAUSE = new RegExp(`^(?:(?:==|!=)\\s*${PEP440_VERSION}(?:\\.\\*)?|(?:~=|<=|>=|<|>)\\s*${PEP440_VERSION})$`, 'i')

function pep440Problem(version: string): string | null {
  if (PEP440_BARE.test(version)) return null
  const clauses = version.split(',').map((clause) => clause.trim())
  if (clauses.every((clause) => PEP440_CLAUSE.test(clause))) return null
  return 'must be a PEP 440 version or version specifier (like 1.4.0, ==1.4.*, >=1.2,<2); no URL, path, `@` reference or environment marker'
}

/**
 * npm: a semver version or range only. `semver.validRange` already refuses `file:`, `link:`, URLs,
 * git specs (`git+…`, `github:…`, `user/repo`), aliases (`npm:other@1`) and dist-tags (`latest`,
 * `next`): a tag is a name the registry's owner may point anywhere at any time, not a version.
 * The explicit test for `:`, `/` and `@` keeps that true whatever a later semver accepts loosely.
 */
function npmProblem(version: string): string | null {
  if (/[:/@\\]/.test(version) || semver.validRange(version) === null) {
    return 'must be a semver version or range (like 1.4.0 or ^1.4.0); not a tag such as latest, a file:, link: or URL, a git spec or an npm: alias'
  }
  return null
}

/** A tag as the OCI distribution spec defines one, or a sha256 digest. */
const IMAGE_TAG = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/
const IMAGE_DIGEST = /^sha256:[a-f0-9]{64}$/

/** NuGet's version and version-range notation (`1.2.3`, `1.2.3-beta.1`, `[1.0,2.0)`). */
const NUGET_VERSION = /^[[(]?[0-9A-Za-z.+-]*(?:,[0-9A-Za-z.+-]*)?[\])]?$/

/** The version of a package, checked by its registry type. */
export function versionProblem(registryType: string, version: string): string | null {
  if (version === '' || /[\s\x00-\x1f\x7f]/.test(version)) return 'must be a version without spaces or control characters'
  switch (registryType) {
    case 'npm':
      return npmProblem(version)
    case 'pypi':
      return pep440Problem(version)
    case 'docker':
    case 'oci':
      return IMAGE_TAG.test(version) || IMAGE_DIGEST.test(version) ? null : 'must be an image tag (like 1.4.0) or a digest (sha256: and 64 hexadecimal digits)'
    case 'nuget':
      return /[0-9]/.test(version) && NUGET_VERSION.test(version) ? null : 'must be a NuGet version or version range (like 1.4.0 or [1.0,2.0))'
    default:
      // An MCP bundle is its https URL, checked by its SHA-256; its version is a label only.
      return IMAGE_TAG.test(version) ? null : 'must be a version label (letters, digits, dots, dashes, underscores)'
  }
}

/**
 * An image reference: registry host, path, tag or digest. Starting with `-` it would be read as an
 * option of the runner, starting with `/` or holding `..` as a path (the `..` test is below).
 */
const IMAGE = { pattern: /^[A-Za-z0-9][A-Za-z0-9._/:@-]*$/, shape: 'an image reference such as ghcr.io/owner/image:1.0' }

const IDENTIFIERS: Record<string, { pattern: RegExp; shape: string }> = {
  npm: { pattern: /^(@[a-z0-9][a-z0-9._~-]*\/)?[a-z0-9][a-z0-9._~-]*$/, shape: 'an npm package name such as @scope/name' },
  pypi: { pattern: /^[A-Za-z0-9][A-Za-z0-9._-]*$/, shape: 'a PyPI project name (letters, digits, dots, dashes, underscores)' },
  docker: IMAGE,
  oci: IMAGE,
  nuget: { pattern: /^[A-Za-z0-9_]+(?:[.-][A-Za-z0-9_]+)*$/, shape: 'a NuGet package id' },
  mcpb: { pattern: /^[Hh][Tt][Tt][Pp][Ss]:\/\/[^\s/?#@]+[^\s]*$/, shape: 'the https URL of the bundle' },
}

/** The identifier of a package, checked by its registry type (a type no satellite runs is not checked here). */
export function identifierProblem(registryType: string, identifier: string): string | null {
  const rule = IDENTIFIERS[registryType]
  if (rule === undefined) return null
  if (!rule.pattern.test(identifier) || (rule === IMAGE && identifier.includes('..'))) {
    return `must be ${rule.shape}`
  }
  return null
}

/**
 * The runner options an entry may give, by registry type: options that change how much the runner
 * says or whether it asks, never where it fetches from, what it loads or what it mounts. npx and
 * uvx take nothing else; docker none at all (`-v`, `--privileged`, `--network` would reach the
 * host). `--python` (uvx) takes one word, a CPython minor version.
 */
export const RUNTIME_OPTIONS: Record<string, { flags: readonly string[]; withValue: Record<string, { pattern: RegExp; shape: string }> }> = {
  npm: { flags: ['-y', '--yes', '--quiet', '-q'], withValue: {} },
  pypi: { flags: ['--quiet', '-q', '--no-progress'], withValue: { '--python': { pattern: /^3\.[0-9]{1,2}$/, shape: 'a CPython version such as 3.12' } } },
}

/**
 * Runtime arguments as argv words (`words[i]`), checked in order; answers the index of the first
 * word refused, with why. A team's own server may give none: its team wrote it, and the runner's
 * options are the satellite's business, not the team's.
 */
export function runtimeArgsProblem(registryType: string, words: readonly string[], visibility: 'global' | 'team'): { index: number; message: string } | null {
  if (words.length === 0) return null
  if (visibility === 'team') return { index: 0, message: "a team's server may not give runtime arguments (options of the runner, npx, uvx or docker)" }
  const allowed = RUNTIME_OPTIONS[registryType]
  const list = allowed === undefined ? 'none' : [...allowed.flags, ...Object.keys(allowed.withValue).map((option) => `${option} <value>`)].join(', ')
  for (let index = 0; index < words.length; index++) {
    const word = words[index]!
    if (allowed?.flags.includes(word) === true) continue
    const valueRule = allowed?.withValue[word]
    if (valueRule !== undefined) {
      const value = words[index + 1]
      if (value === undefined || !valueRule.pattern.test(value)) return { index: value === undefined ? index : index + 1, message: `${word} must be followed by ${valueRule.shape}` }
      index++
      continue
    }
    return { index, message: `${JSON.stringify(word.slice(0, 100))} is not a runtime option an entry may give for ${registryType} packages (allowed: ${list})` }
  }
  return null
}
