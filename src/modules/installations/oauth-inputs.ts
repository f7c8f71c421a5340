import type { InstallationInput, InstallationTarget, OAuthInputDetails } from '../../formats/installation-inputs.js'
import { invalid } from './derivation.js'
import { inputSourceOf, placeholdersOf, remotesOf } from './inputs.js'
import type { VersionRow } from '../../db/repositories/server-versions.js'
import type { DerivedServer } from './derivation.js'

/**
 * The `oauth` input of an installation of a remote target whose server asks for OAuth sign-in
 * (MCP authorization): its key is `oauth:<resource>`, the remote server's canonical URI. Whether
 * the server asks is said by the catalogue's remote (`auth: "oauth"`), by the request
 * (`auth: "oauth"`), or learned by probing it (a 401 with a Bearer challenge).
 */

/** What the installations need of the connections: the probe, and the canonical form of a URL. */
export interface OAuthProbe {
  probe(url: string): Promise<OAuthInputDetails | null>
  canonical(url: string): string
}

/** The remote of a target, with its URL's template variables filled in from values or defaults; null for a package. */
export function remoteOf(server: DerivedServer, version: VersionRow, target: InstallationTarget, values: Record<string, string | null>): { url: string | null; oauth: boolean } | null {
  if (target.kind !== 'remote') return null
  const source = inputSourceOf({ serverJson: version.serverJson, packages: version.packages ?? server.packages, remotes: version.remotes ?? server.remotes })
  const item = remotesOf(source)[target.index] as Record<string, unknown> | undefined
  if (item === undefined || typeof item.url !== 'string') return null
  const variables = (typeof item.variables === 'object' && item.variables !== null ? item.variables : {}) as Record<string, { default?: unknown; value?: unknown }>
  let url = item.url
  for (const name of placeholdersOf(item.url)) {
    const value = values[`urlvar:${name}`] ?? (typeof variables[name]?.value === 'string' ? variables[name]!.value : undefined) ?? variables[name]?.default
    if (typeof value !== 'string') return { url: null, oauth: item.auth === 'oauth' }
    url = url.split(`{${name}}`).join(encodeURIComponent(value))
  }
  try {
    return { url: new URL(url).href === '' ? null : url, oauth: item.auth === 'oauth' }
  } catch {
    return { url: null, oauth: item.auth === 'oauth' }
  }
}

/** The inputs with the oauth input for `details` (none when null), scoped by `teamConnections`. */
export function withOAuthInput(inputs: readonly InstallationInput[], details: OAuthInputDetails | null, teamConnections: readonly string[]): InstallationInput[] {
  const others = inputs.filter((input) => input.kind !== 'oauth')
  if (details === null) return others
  const key = `oauth:${details.resource}`
  return [...others, {
    key, kind: 'oauth', required: true, secret: true, scope: teamConnections.includes(key) ? 'team' : 'user',
    description: `Sign in at the authorization server of ${details.resource}`, oauth: details,
  }]
}

/** The oauth inputs scoped again by `teamConnections`; a key that is no oauth input is refused (400 naming the field). */
export function scopedConnections(inputs: readonly InstallationInput[], teamConnections: readonly string[]): InstallationInput[] {
  const keys = new Set(inputs.filter((input) => input.kind === 'oauth').map((input) => input.key))
  const unknown = teamConnections.filter((key) => !keys.has(key))
  if (unknown.length > 0) {
    throw invalid('team_connections', `${unknown.join(', ')} ${unknown.length === 1 ? 'is not an oauth input' : 'are not oauth inputs'} of this installation${keys.size === 0 ? ' (it has none)' : `: it has ${[...keys].join(', ')}`}`)
  }
  return inputs.map((input) => input.kind !== 'oauth' ? input : { ...input, scope: teamConnections.includes(input.key) ? 'team' : 'user' })
}

/** The keys whose connections no longer fit: the oauth input is gone, or its scope changed. */
export function endedConnectionKeys(before: readonly InstallationInput[], after: readonly InstallationInput[]): string[] {
  const now = new Map(after.filter((input) => input.kind === 'oauth').map((input) => [input.key, input.scope]))
  return before.filter((input) => input.kind === 'oauth' && now.get(input.key) !== input.scope).map((input) => input.key)
}

/**
 * After a derivation the service did on its own (a followed version, an edited entry): the oauth
 * inputs the installation had are kept, since no probe runs there and the connections made for
 * them stay valid while the target stays a remote.
 */
export function keptOAuthInputs(before: readonly InstallationInput[], derived: readonly InstallationInput[], targetKind: 'package' | 'remote'): InstallationInput[] {
  if (targetKind !== 'remote' || derived.some((input) => input.kind === 'oauth')) return [...derived]
  return [...derived, ...before.filter((input) => input.kind === 'oauth')]
}
