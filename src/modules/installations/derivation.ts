import type { InstallationsRepository } from '../../db/repositories/installations.js'
import type { ServerRow } from '../../db/repositories/server-filters.js'
import type { VersionRow } from '../../db/repositories/server-versions.js'
import type { InstallationInput, InstallationTarget } from '../../formats/installation-inputs.js'
import { errors } from '../../http/errors.js'
import { deriveInputs, inputSourceOf, targetTransport, unknownInputKeys } from './inputs.js'
import type { ValueBox } from './sealed-values.js'
import { targetRuleProblem } from './target-rules.js'

/**
 * What an installation runs, derived from a server's version for one target, and what becomes of
 * its values when that changes. Shared by the installations' own writes and by the catalogue's
 * (a version followed, a server's entry edited).
 */

/** What runs, as derived from a version for one target. */
export interface Derived {
  version: VersionRow
  target: InstallationTarget
  transport: string
  inputs: InstallationInput[]
}

export const notInstallable = (message: string) => errors.conflict('VERSION_NOT_INSTALLABLE', message)
export const invalid = (field: string, message: string) => errors.validation([{ field, message, in: 'body' }])

/** The server's fields a derivation reads (its own packages and remotes serve a version without them). */
export type DerivedServer = Pick<ServerRow, 'slug' | 'packages' | 'remotes' | 'transportType' | 'visibility'>

/**
 * The target and inputs of a version. `dropUnknownScoped`: keys kept from an earlier version
 * that this one lacks are dropped silently (they were checked when chosen); keys the request
 * names must exist (400). A target that breaks the runtime rules (target-rules.ts) is refused.
 */
export function deriveTarget(server: DerivedServer, version: VersionRow, target: InstallationTarget | undefined, userScoped: readonly string[], dropUnknownScoped = false): Derived {
  const source = inputSourceOf({ serverJson: version.serverJson, packages: version.packages ?? server.packages, remotes: version.remotes ?? server.remotes })
  const derivation = deriveInputs(source, { target, userScopedKeys: userScoped })
  if (!derivation.ok) {
    if (derivation.target === null) throw notInstallable(`Version ${version.version} of "${server.slug}" has neither a package nor a remote: there is nothing to run.`)
    throw invalid('target', derivation.reason)
  }
  const transport = targetTransport(source, derivation.target, server.transportType)
  if (!transport.ok) throw invalid('target', transport.reason)
  const refused = targetRuleProblem(source, derivation.target, server.visibility)
  if (refused !== null) throw invalid('target', refused)
  const unknown = dropUnknownScoped ? [] : unknownInputKeys(derivation.inputs, userScoped)
  if (unknown.length > 0) throw invalid('user_scoped', `${unknown.join(', ')} ${unknown.length === 1 ? 'is not an input' : 'are not inputs'} of this target`)
  return { version, target: derivation.target, transport: transport.transport, inputs: derivation.inputs }
}

/**
 * After the inputs changed: values of keys that are gone, or whose scope changed, are dropped;
 * a value that is now a secret is sealed. A secret that is no longer one stays sealed (a value
 * written as a secret is never shown). `installations` is the repository of the open transaction.
 */
export async function reconcileValues(installations: InstallationsRepository, box: ValueBox, installationId: string, inputs: readonly InstallationInput[]): Promise<void> {
  const byKey = new Map(inputs.map((input) => [input.key, input]))
  for (const row of await installations.allValuesOf(installationId)) {
    const input = byKey.get(row.key)
    if (input === undefined || (input.scope === 'team') !== (row.userId === null)) {
      await installations.deleteValue(installationId, row.userId, row.key)
    } else if (input.secret && row.sealed === null && row.value !== null) {
      await installations.putValue({ ...row, value: null, sealed: box.seal(row.value, { installationId, userId: row.userId, key: row.key }) })
    }
  }
}
