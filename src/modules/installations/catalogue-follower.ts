import type { DesiredStamps } from '../../db/repositories/desired-stamps.js'
import type { InstallationRow, InstallationsRepository } from '../../db/repositories/installations.js'
import type { ServerRow } from '../../db/repositories/server-filters.js'
import type { ServerVersionsRepository, VersionRow } from '../../db/repositories/server-versions.js'
import type { ServersRepository } from '../../db/repositories/servers.js'
import type { Db } from '../../db/types.js'
import { AppError, errors } from '../../http/errors.js'
import type { Clock } from '../../lib/clock.js'
import type { AuditLog } from '../audit/service.js'
import { deriveTarget, reconcileValues, type Derived } from './derivation.js'
import { keptOAuthInputs } from './oauth-inputs.js'
import type { ValueBox } from './sealed-values.js'

/** Reads a server whatever its visibility: the catalogue's own transactions act for everyone. */
const EVERYONE = { userId: '', isGlobalAdmin: true }

const userScopedKeys = (row: InstallationRow): string[] => row.inputs.filter((input) => input.scope === 'user').map((input) => input.key)

/** JSON with object members in a fixed order: PostgreSQL's jsonb does not keep the order they were written in. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`
  if (value !== null && typeof value === 'object') {
    return `{${Object.keys(value).sort().map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`).join(',')}}`
  }
  return JSON.stringify(value) ?? 'null'
}

/**
 * What installations do when the catalogue changes under them, run inside the catalogue's own
 * transaction (so a refusal writes nothing, and a satellite never sees half of a change): follow
 * a new latest version, follow an edit of the server's own entry, keep a server some team runs.
 */
export class CatalogueFollower {
  constructor(private readonly deps: {
    installations: InstallationsRepository
    servers: ServersRepository
    versions: ServerVersionsRepository
    stamps: DesiredStamps
    box: ValueBox
    audit: AuditLog
    clock: Clock
  }) {}

  /**
   * Run in the catalogue transaction that changed a server's latest version: the installations
   * that track it move to it, each keeping its target and user-scoped keys, when the new version
   * has that target and it can be installed; one that cannot move stays where it is.
   */
  async followLatest(serverId: string, tx: Db): Promise<void> {
    const { installations, versions, servers, audit } = this.deps
    // The server's stored versions changed (an import may refresh the document of a version that
    // runs, a version's status may change): the documents of the satellites running it are built again.
    await this.deps.stamps.with(tx).ofServer(serverId)
    const tracking = await installations.with(tx).trackingLatest(serverId)
    if (tracking.length === 0) return
    const latest = await versions.with(tx).latest(serverId)
    if (latest === undefined) return
    const server = await servers.with(tx).find(serverId, EVERYONE)
    if (server === undefined) return
    for (const row of tracking) {
      if (row.versionId === latest.id) continue
      let derived: Derived
      try {
        derived = deriveTarget(server, latest, { kind: row.targetKind, index: row.targetIndex }, userScopedKeys(row), true)
        derived.inputs = keptOAuthInputs(row.inputs, derived.inputs, row.targetKind)
      } catch (error) {
        if (error instanceof AppError) continue
        throw error
      }
      await installations.with(tx).update(row.id, { versionId: latest.id, transport: derived.transport, inputs: derived.inputs }, { respec: true, now: this.now() })
      await reconcileValues(installations.with(tx), this.deps.box, row.id, derived.inputs)
      await audit.record('installation.version_followed', { target: row.id, details: { team_id: row.teamId, server_id: serverId, version: latest.version } }, tx)
    }
  }

  /**
   * Run in the catalogue transaction that changed a server's own entry (`before` → `after`). The
   * server's packages, remotes and transport serve every version made without packages or remotes
   * of its own, so an installation running such a version at a target whose entry changed runs
   * something else now: it is derived again (the values of keys that remain are kept), its spec
   * moves, and so does the stamp of its satellite. An edit that leaves any such installation
   * without its target, or with one that no longer derives, is refused whole: 409 SERVER_IN_USE
   * naming how many, and nothing is written (the caller's transaction rolls back).
   */
  async followEntryEdit(before: ServerRow, after: ServerRow, tx: Db): Promise<void> {
    const { installations, versions, audit } = this.deps
    const versionsById = new Map<string, VersionRow | undefined>()
    const versionOf = async (id: string) => {
      if (!versionsById.has(id)) versionsById.set(id, await versions.with(tx).findById(id))
      return versionsById.get(id)
    }
    const broken: string[] = []
    const moved: Array<{ row: InstallationRow; derived: Derived }> = []
    for (const row of await installations.with(tx).ofServer(after.id)) {
      const version = await versionOf(row.versionId)
      if (version === undefined || !runsServerEntry(row, version) || !entryChanged(row, before, after)) continue
      try {
        const derived = deriveTarget(after, version, { kind: row.targetKind, index: row.targetIndex }, userScopedKeys(row), true)
        moved.push({ row, derived: { ...derived, inputs: keptOAuthInputs(row.inputs, derived.inputs, row.targetKind) } })
      } catch (error) {
        if (!(error instanceof AppError)) throw error
        broken.push(`${row.name}: ${reasonOf(error)}`)
      }
    }
    if (broken.length > 0) {
      const count = broken.length
      throw errors.conflict('SERVER_IN_USE', `${count} installation${count === 1 ? '' : 's'} of teams run${count === 1 ? 's' : ''} what this edit removes or breaks ` +
        `(${broken[0]}${count > 1 ? ', …' : ''}); move ${count === 1 ? 'it' : 'them'} to another target or version, or delete ${count === 1 ? 'it' : 'them'}, first.`)
    }
    for (const { row, derived } of moved) {
      await installations.with(tx).update(row.id, { transport: derived.transport, inputs: derived.inputs }, { respec: true, now: this.now() })
      await reconcileValues(installations.with(tx), this.deps.box, row.id, derived.inputs)
      await audit.record('installation.entry_followed', { target: row.id, details: { team_id: row.teamId, server_id: after.id, version: derived.version.version } }, tx)
    }
    await this.deps.stamps.with(tx).satellites(moved.map(({ row }) => row.satelliteId))
  }

  /** Run in the catalogue transaction deleting a server: one that a team runs is not deleted. */
  async assertServerUnused(serverId: string, tx: Db): Promise<void> {
    const used = await this.deps.installations.with(tx).countForServer(serverId)
    if (used > 0) {
      throw errors.conflict('SERVER_IN_USE', `The server is installed ${used} time${used === 1 ? '' : 's'}; those installations must be deleted first.`)
    }
  }

  private now(): Date {
    return new Date(this.deps.clock.now())
  }
}

/**
 * Whether the installation's target comes from the server's own entry: its version is made by
 * hand (no stored server.json) and has no list of that kind of its own.
 */
function runsServerEntry(row: InstallationRow, version: VersionRow): boolean {
  if (version.serverJson !== null) return false
  return row.targetKind === 'package' ? version.packages === null : version.remotes === null
}

/** Whether the edit changed the installation's target entry (or, for a package, the transport it is spoken to over). */
function entryChanged(row: InstallationRow, before: ServerRow, after: ServerRow): boolean {
  const list = (server: ServerRow): unknown[] => (row.targetKind === 'package' ? server.packages : server.remotes)
  if (canonical(list(before)[row.targetIndex]) !== canonical(list(after)[row.targetIndex])) return true
  return row.targetKind === 'package' && before.transportType !== after.transportType
}

/** The refusal's words: the field problem's message, or the error's. */
function reasonOf(error: AppError): string {
  const details = error.details
  if (Array.isArray(details) && details.length > 0) return String((details[0] as { message?: unknown }).message ?? error.message)
  return error.message
}
