import type { ServerRow } from '../../db/repositories/server-filters.js'
import type { VersionRow } from '../../db/repositories/server-versions.js'
import type { ServerPackage, ServerRemote } from '../../formats/catalogue-entries.js'
import { isObject, shortened } from './server-json-shapes.js'
import { OFFICIAL_META, SERVER_SCHEMA_URL, type RegistryPackage, type RegistryRemote, type ServerJson } from './server-json.js'
import { httpUrlOrNull } from './server-json-catalogue.js'
import { isoTime } from '../../lib/iso-time.js'

/**
 * The catalogue written as the MCP Registry's `server.json` (2025-12-11): the document of one
 * version of a server, its name, and the registry-managed `_meta` of a list item. Imported
 * servers give back their stored document with the catalogue's own fields over it; servers made
 * by hand get one built from the catalogue. Reading documents is server-json.ts.
 */

/** Longest namespace: with a 100-character slug, the name stays under the format's 200. */
const MAX_NAMESPACE = 90

/**
 * The namespace of the servers this service created by hand: PUBLIC_URL's host reversed
 * (`https://platform.example.com` → `com.example.platform`, `localhost` → `localhost`). An IP
 * address has no domain to reverse: `local.` and its digits joined by dashes (`local.10-0-0-5`).
 * Always a namespace the name pattern admits (letters, digits, dots, dashes).
 */
export function namespaceOf(publicUrl: string): string {
  let host: string
  try {
    host = new URL(publicUrl).hostname.toLowerCase()
  } catch {
    return 'localhost'
  }
  const dashed = (text: string) => text.replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '')
  if (host.startsWith('[') || /^\d+(?:\.\d+){3}$/.test(host)) return `local.${dashed(host) || '0'}`
  const labels = host.split('.').map(dashed).filter((label) => label !== '')
  if (labels.length === 0) return 'localhost'
  return labels.reverse().join('.').slice(0, MAX_NAMESPACE).replace(/[.-]+$/, '')
}

/** The name a server has in exported documents and in the sub-registry API. */
export function registryNameOf(server: Pick<ServerRow, 'registryName' | 'slug'>, namespace: string): string {
  return server.registryName ?? `${namespace}/${server.slug}`
}

/**
 * The 2025-12-11 document of one version of a server (`version` null: the server alone, for a
 * server without versions): the stored document with the catalogue's own fields over it, or one
 * built from the catalogue for servers created by hand. The official schema validates it.
 */
export function exportDocument(server: ServerRow, version: VersionRow | null, namespace: string): ServerJson {
  const stored = version?.serverJson
  return isObject(stored) && typeof stored.name === 'string' ? overlaid(stored as unknown as ServerJson, server) : builtDocument(server, version, namespace)
}

/** The repository's host as the format names it (`github`, `gitlab`, `bitbucket`), else the host itself. */
export function repositorySource(url: string): string {
  let host: string
  try {
    host = new URL(url).hostname.toLowerCase().replace(/^www\./, '')
  } catch {
    return 'unknown'
  }
  return host === 'github.com' ? 'github' : host === 'gitlab.com' ? 'gitlab' : host === 'bitbucket.org' ? 'bitbucket' : host
}

/**
 * An imported version's stored document with the catalogue's current fields over it: what an
 * administrator changed here (description, display name, links) is what others see. A link the
 * catalogue could not hold (not http or https) was never copied, so it stays as published.
 */
function overlaid(stored: ServerJson, server: ServerRow): ServerJson {
  const out = structuredClone(stored)
  out.$schema = SERVER_SCHEMA_URL
  const lastPart = out.name.slice(out.name.lastIndexOf('/') + 1)
  if (/\S/.test(server.description)) out.description = shortened(server.description)
  if (server.name !== lastPart) out.title = shortened(server.name)
  else if (out.title !== undefined && out.title !== server.name) delete out.title
  if (server.websiteUrl !== null) out.websiteUrl = server.websiteUrl
  else if (httpUrlOrNull(out.websiteUrl) !== null) delete out.websiteUrl
  if (server.repositoryUrl !== null) {
    out.repository = out.repository === undefined
      ? { url: server.repositoryUrl, source: repositorySource(server.repositoryUrl) }
      : { ...out.repository, url: server.repositoryUrl }
  } else if (httpUrlOrNull(out.repository?.url) !== null) delete out.repository
  return out
}

/** What a client runs a package with, for a package that has runtime arguments. */
const RUNTIME_HINTS: Partial<Record<string, string>> = { npm: 'npx', pypi: 'uvx', oci: 'docker', nuget: 'dnx' }

/** A document for a server made by hand (or a version without a stored document), from the catalogue. */
function builtDocument(server: ServerRow, version: VersionRow | null, namespace: string): ServerJson {
  const name = registryNameOf(server, namespace)
  const lastPart = name.slice(name.lastIndexOf('/') + 1)
  const remotes = version?.remotes ?? server.remotes
  const packages = version?.packages ?? server.packages
  // A package reached over the network listens where the server's remote of that kind says.
  const wanted = server.transportType === 'http' ? 'streamable-http' : server.transportType === 'sse' ? 'sse' : null
  const listening = wanted === null ? undefined : remotes.find((remote) => remote.type === wanted)
  const transport: RegistryPackage['transport'] = listening === undefined ? { type: 'stdio' } : { type: listening.type, url: listening.url }
  const document: ServerJson = {
    $schema: SERVER_SCHEMA_URL,
    name,
    ...(server.name !== lastPart ? { title: shortened(server.name) } : {}),
    description: shortened(/\S/.test(server.description) ? server.description : server.name),
    version: version?.version ?? '0.0.0',
  }
  if (server.websiteUrl !== null) document.websiteUrl = server.websiteUrl
  if (server.repositoryUrl !== null) document.repository = { url: server.repositoryUrl, source: repositorySource(server.repositoryUrl) }
  if (server.iconUrl !== null && /^https:\/\//i.test(server.iconUrl) && server.iconUrl.length <= 255) document.icons = [{ src: server.iconUrl }]
  if (packages.length > 0) document.packages = packages.map((item) => registryPackage(item, transport))
  if (remotes.length > 0) document.remotes = remotes.map(registryRemote)
  return document
}

/** A catalogue remote as the format writes it: the same members (headers and variables are already its inputs). */
function registryRemote(remote: ServerRemote): RegistryRemote {
  return {
    type: remote.type,
    url: remote.url,
    ...(remote.headers === undefined ? {} : { headers: structuredClone(remote.headers) }),
    ...(remote.variables === undefined ? {} : { variables: structuredClone(remote.variables) }),
  }
}

function registryPackage(item: ServerPackage, transport: RegistryPackage['transport']): RegistryPackage {
  const registryType = item.registry_type === 'docker' ? 'oci' : item.registry_type
  const args = item.runtime_args ?? []
  const hint = RUNTIME_HINTS[registryType]
  return {
    registryType,
    identifier: item.identifier,
    // "latest" names no version: the format refuses it, so the package goes without one.
    ...(item.version === undefined || item.version === 'latest' ? {} : { version: item.version }),
    ...(args.length > 0 && hint !== undefined ? { runtimeHint: hint } : {}),
    transport: { ...transport },
    ...(args.length > 0 ? { runtimeArguments: args.map((value) => ({ type: 'positional', value })) } : {}),
    ...(item.environment_variables === undefined || item.environment_variables.length === 0 ? {} : {
      environmentVariables: item.environment_variables.map((variable) => ({
        name: variable.name,
        ...(variable.description === undefined || variable.description === '' ? {} : { description: variable.description }),
        isRequired: variable.required ?? false,
        isSecret: variable.secret ?? false,
        ...(variable.default === undefined ? {} : { default: variable.default }),
      })),
    }),
  }
}

/** The registry-managed `_meta` of a list item for one version. */
export function itemMeta(server: ServerRow, version: VersionRow): Record<string, unknown> {
  const updatedAt = server.updatedAt.getTime() > version.updatedAt.getTime() ? server.updatedAt : version.updatedAt
  return {
    [OFFICIAL_META]: {
      status: version.status === 'yanked' ? 'deleted' : version.status,
      publishedAt: isoTime(version.createdAt),
      updatedAt: isoTime(updatedAt),
      isLatest: version.isLatest,
    },
  }
}
