/**
 * The two older shapes of `server.json` still found in registries and seed files, brought to the
 * 2025-12-11 shape before the rules are checked:
 * - the May-2025 seed shape: `version_detail: {version}`, packages `{registry_name, name, version}`,
 *   remotes `{transport_type, url}`;
 * - the 2025-07 shape: `version`, `status` and `website_url` at the top, packages
 *   `{registry_type, registry_base_url, identifier, file_sha256, runtime_hint, transport}`,
 *   remotes `{type, url}`.
 * Both spell inputs in snake_case (`is_required`, `is_secret`, `value_hint`, `is_repeated`).
 * The conversion renames and fills in; whatever it cannot place is left for the rules to report.
 * A camelCase member present already wins over its snake_case twin. Where the older shapes allowed
 * what the 2025-12-11 rules do not, and real seed entries use it, the conversion mends it:
 * - a description longer than 100 characters is shortened (the whole text is the catalogue's);
 *   an empty one becomes the title, else the name's last part;
 * - an empty package `version` names no version and is dropped;
 * - an empty `transport_type` on a remote is read from its URL: `sse` when the path ends in
 *   `/sse`, else `streamable-http`.
 */

type Json = Record<string, unknown>

/** A JSON object (not an array, not null). */
export const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value)

/** Whether a document is in one of the older shapes (then a package without transport is stdio). */
export function isOlderShape(document: Json): boolean {
  if ('version_detail' in document || 'website_url' in document) return true
  const packages = Array.isArray(document.packages) ? document.packages.filter(isObject) : []
  const remotes = Array.isArray(document.remotes) ? document.remotes.filter(isObject) : []
  return packages.some((item) => ['registry_name', 'registry_type', 'runtime_hint', 'file_sha256', 'registry_base_url', 'package_arguments', 'runtime_arguments', 'environment_variables'].some((key) => key in item))
    || remotes.some((item) => 'transport_type' in item)
}

/** Renames `from` to `to` when `to` is absent; drops `from` either way. */
function rename(object: Json, from: string, to: string): void {
  if (!(from in object)) return
  if (!(to in object)) object[to] = object[from]
  delete object[from]
}

const INPUT_KEYS: Array<[string, string]> = [
  ['is_required', 'isRequired'],
  ['is_secret', 'isSecret'],
  ['value_hint', 'valueHint'],
  ['is_repeated', 'isRepeated'],
]

function input(value: unknown): unknown {
  if (!isObject(value)) return value
  const out: Json = { ...value }
  for (const [from, to] of INPUT_KEYS) rename(out, from, to)
  if (isObject(out.variables)) out.variables = Object.fromEntries(Object.entries(out.variables).map(([key, each]) => [key, input(each)]))
  return out
}

const inputs = (value: unknown): unknown => (Array.isArray(value) ? value.map(input) : value)

function transport(value: unknown): unknown {
  if (!isObject(value)) return value
  const out: Json = { ...value }
  rename(out, 'transport_type', 'type')
  if ('headers' in out) out.headers = inputs(out.headers)
  return out
}

function olderPackage(value: unknown): unknown {
  if (!isObject(value)) return value
  const out: Json = { ...value }
  // May 2025: `registry_name` is the registry type and `name` the identifier.
  rename(out, 'registry_name', 'registryType')
  rename(out, 'registry_type', 'registryType')
  if (!('identifier' in out) && typeof out.name === 'string') out.identifier = out.name
  if (out.identifier === out.name) delete out.name
  // The registry's older name for container images.
  if (out.registryType === 'docker') out.registryType = 'oci'
  rename(out, 'registry_base_url', 'registryBaseUrl')
  rename(out, 'file_sha256', 'fileSha256')
  rename(out, 'runtime_hint', 'runtimeHint')
  rename(out, 'runtime_arguments', 'runtimeArguments')
  rename(out, 'package_arguments', 'packageArguments')
  rename(out, 'environment_variables', 'environmentVariables')
  if (typeof out.version === 'string' && out.version.trim() === '') delete out.version
  for (const key of ['runtimeArguments', 'packageArguments', 'environmentVariables']) if (key in out) out[key] = inputs(out[key])
  out.transport = 'transport' in out ? transport(out.transport) : { type: 'stdio' }
  return out
}

function remote(value: unknown): unknown {
  if (!isObject(value)) return value
  const out = transport(value) as Json
  if (out.type === '' && typeof out.url === 'string') out.type = transportOfUrl(out.url)
  if (isObject(out.variables)) out.variables = Object.fromEntries(Object.entries(out.variables).map(([key, each]) => [key, input(each)]))
  return out
}

/** Where a remote that names no transport listens by convention: SSE endpoints at `/sse`. */
function transportOfUrl(url: string): 'sse' | 'streamable-http' {
  const path = url.replace(/[?#].*$/s, '').replace(/\/+$/, '')
  return /\/sse$/i.test(path) ? 'sse' : 'streamable-http'
}

/** The format's longest description and title. */
export const MAX_DESCRIPTION = 100

/** At most `max` characters (code points, as the format counts them), ending in `…` when cut. */
export function shortened(text: string, max = MAX_DESCRIPTION): string {
  const characters = Array.from(text)
  return characters.length <= max ? text : `${characters.slice(0, max - 1).join('').trimEnd()}…`
}

/** An older document's description as the format takes it: at most 100 characters, never empty. */
function description(document: Json): unknown {
  const given = document.description
  if (typeof given !== 'string') return given
  if (/\S/.test(given)) return shortened(given)
  const title = typeof document.title === 'string' && /\S/.test(document.title) ? document.title : null
  const name = typeof document.name === 'string' ? document.name.slice(document.name.lastIndexOf('/') + 1) : ''
  return shortened(title ?? (name === '' ? given : name))
}

/** The older document in the 2025-12-11 shape (a new object; the given one is not changed). */
export function upConverted(document: Json): Json {
  const out: Json = { ...document }
  if (!('version' in out) && isObject(out.version_detail) && 'version' in out.version_detail) out.version = out.version_detail.version
  if ('description' in out) out.description = description(out)
  rename(out, 'website_url', 'websiteUrl')
  if (Array.isArray(out.packages)) out.packages = out.packages.map(olderPackage)
  if (Array.isArray(out.remotes)) out.remotes = out.remotes.map(remote)
  return out
}

/** The seed shape's release date (`version_detail.release_date`), when it is a date. */
export function seedReleaseDate(document: Json): Date | null {
  const detail = document.version_detail
  if (!isObject(detail) || typeof detail.release_date !== 'string') return null
  const date = new Date(detail.release_date)
  return Number.isNaN(date.getTime()) ? null : date
}
