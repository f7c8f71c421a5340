import type { UserActor } from '../../auth/caller.js'
import type { ConnectionEnding } from '../../db/repositories/connections.js'
import type { DesiredStamps } from '../../db/repositories/desired-stamps.js'
import type { InstallationPatch, InstallationRow, InstallationsRepository } from '../../db/repositories/installations.js'
import type { ServerVersionsRepository } from '../../db/repositories/server-versions.js'
import type { ServersRepository } from '../../db/repositories/servers.js'
import type { TeamsRepository } from '../../db/repositories/teams.js'
import { newId } from '../../db/ids.js'
import type { Database, Db } from '../../db/types.js'
import type { InstallationInput, InstallationTarget, OAuthInputDetails } from '../../formats/installation-inputs.js'
import { errors } from '../../http/errors.js'
import type { Clock } from '../../lib/clock.js'
import type { AuditLog } from '../audit/service.js'
import { deriveTarget, invalid, reconcileValues } from './derivation.js'
import { checkTracking, installableServer, installableVersion } from './installable.js'
import type { InstallationReads } from './installation-reads.js'
import type { InstallationMoves } from './moves.js'
import { endedConnectionKeys, oauthDetailsFor, remoteOf, scopedConnections, withOAuthInput, type OAuthProbe } from './oauth-inputs.js'
import type { Placement } from './placement.js'
import type { ValueBox } from './sealed-values.js'
import type { CreateInstallationBody, InstallationView, UpdateInstallationBody } from './schemas.js'
import { lockedInstallation, teamTransaction } from './team-writes.js'
import { writeValues } from './value-writes.js'
import { checkValues } from './values.js'

const nameTaken = (name: string) => errors.conflict('INSTALLATION_NAME_TAKEN', `The team already has an installation named "${name}"; choose another name.`)

/**
 * Creating, changing, restarting and deleting installations. Every write runs in one transaction
 * that first takes the team's row (team-writes.ts), so a team's installations change one write
 * at a time (names, placements, values) and a team being deleted waits for them. What a write
 * answers is read afterwards, as the caller sees it (installation-reads.ts).
 */
export class InstallationWrites {
  constructor(private readonly deps: {
    database: Database
    installations: InstallationsRepository
    servers: ServersRepository
    versions: ServerVersionsRepository
    teams: TeamsRepository
    /** Marks the satellites whose desired-state documents a write changes. */
    stamps: DesiredStamps
    box: ValueBox
    audit: AuditLog
    clock: Clock
    placement: Pick<Placement, 'rules' | 'choose'>
    /** Drops the members' own values an installation's new satellite may not have. */
    moves: Pick<InstallationMoves, 'dropUnapprovedOn'>
    reads: Pick<InstallationReads, 'get' | 'detail'>
    /** Learns whether a remote server asks for OAuth sign-in (absent: no oauth inputs are derived). */
    oauth?: OAuthProbe
    /** Finds again the tools held under pinning (tools-service.ts), when pin_tools changes. */
    refreshHeld?: (tx: Db, installation: InstallationRow) => Promise<unknown>
    /** Ends connections whose oauth input is gone (or changed scope), or whose installation is deleted. */
    endConnections?: ConnectionEnding
  }) {}

  async create(teamId: string, body: CreateInstallationBody, actor: UserActor): Promise<InstallationView> {
    const { installations, audit } = this.deps
    const now = this.now()
    const rules = await this.deps.placement.rules()
    // Outside the transaction: the probe may take seconds.
    const oauth = await this.oauthDetails(teamId, body.server_id, body.version, body.target, body.values ?? {}, body.auth, [])
    const id = await teamTransaction(this.deps, teamId, async (tx) => {
      const server = await installableServer(this.deps.servers, body.server_id, teamId, tx)
      const version = await installableVersion(this.deps.versions, server, body.version, tx)
      await checkTracking(this.deps.versions, server, version, body.track_latest, body.version, tx)
      const derived = deriveTarget(server, version, body.target, body.user_scoped ?? [])
      derived.inputs = scopedConnections(withOAuthInput(derived.inputs, oauth, []), body.team_connections ?? [])
      const problems = checkValues(derived.inputs, body.values ?? {}, 'team')
      if (problems.length > 0) throw errors.validation(problems)
      const network = body.network ?? 'full'
      checkNetwork(derived.target.kind, network)
      const satelliteId = await this.deps.placement.choose({ teamId, visibility: server.visibility }, body.satellite_id, rules, tx)
      const row: InstallationRow = {
        id: newId(), teamId, serverId: server.id, versionId: version.id, name: '', trackLatest: body.track_latest ?? body.version === undefined,
        targetKind: derived.target.kind, targetIndex: derived.target.index, transport: derived.transport, inputs: derived.inputs,
        satelliteId, desired: body.desired ?? 'running', network, specRevision: 1, restartGeneration: 0, disabledTools: null, allowedTools: null, pinTools: false, heldTools: [], createdBy: actor.userId, createdAt: now, updatedAt: now,
      }
      const created = body.name !== undefined
        ? await installations.with(tx).insert({ ...row, name: body.name })
        : await this.insertWithFreeName(row, server.slug, tx)
      if (created === null) throw nameTaken(body.name!)
      await writeValues(this.deps, tx, created.id, null, derived.inputs, body.values ?? {}, now, null)
      await this.deps.stamps.with(tx).satellites([satelliteId])
      await audit.record('installation.created', {
        actorId: actor.userId, ip: actor.ip, target: created.id,
        details: {
          team_id: teamId, server_id: server.id, version: version.version, name: created.name, satellite_id: satelliteId, network,
          user_scoped: derived.inputs.filter((input) => input.scope === 'user').map((input) => input.key), keys: Object.keys(body.values ?? {}),
        },
      }, tx)
      return created.id
    })
    return this.deps.reads.get(teamId, id, actor)
  }

  /**
   * Changes what the body names. A new version, target or choice of user-scoped keys derives the
   * inputs again; the values of keys that remain (in the same scope) are kept, the others dropped.
   */
  async update(teamId: string, id: string, body: UpdateInstallationBody, actor: UserActor): Promise<InstallationView> {
    const { installations, audit } = this.deps
    const rules = await this.deps.placement.rules()
    const before = (await this.deps.reads.detail(teamId, id)).installation
    // Outside the transaction: the probe may take seconds. Undefined: the oauth input stays as it is.
    const oauth = body.version !== undefined || body.target !== undefined || body.auth !== undefined || body.track_latest === true
      ? await this.oauthDetails(teamId, before.serverId, body.version, body.target ?? { kind: before.targetKind, index: before.targetIndex }, {}, body.auth, before.inputs)
      : undefined
    let revoke = async () => {}
    await teamTransaction(this.deps, teamId, async (tx) => {
      const current = await lockedInstallation(this.deps.installations, teamId, id, tx)
      const patch: InstallationPatch = {}
      if (body.name !== undefined) patch.name = body.name
      if (body.desired !== undefined) patch.desired = body.desired
      if (body.track_latest !== undefined) patch.trackLatest = body.track_latest
      // Choosing a version pins it, unless the same request asks to follow the latest (which it must then be).
      else if (body.version !== undefined) patch.trackLatest = false
      if (body.network !== undefined) patch.network = body.network
      if (body.pin_tools !== undefined) patch.pinTools = body.pin_tools
      if (body.satellite_id !== undefined) {
        const visibility = (await this.deps.servers.with(tx).find(current.serverId, { userId: '', isGlobalAdmin: true }))?.visibility ?? 'team'
        patch.satelliteId = await this.deps.placement.choose({ teamId, visibility, installationId: id }, body.satellite_id, rules, tx)
      }
      const rederive = body.version !== undefined || body.target !== undefined || body.user_scoped !== undefined || (body.track_latest === true && !current.trackLatest)
      if (rederive) {
        const server = await installableServer(this.deps.servers, current.serverId, teamId, tx)
        const following = patch.trackLatest ?? current.trackLatest
        const version = body.version !== undefined
          ? await installableVersion(this.deps.versions, server, body.version, tx)
          : following ? await installableVersion(this.deps.versions, server, undefined, tx) : (await this.deps.versions.with(tx).findById(current.versionId))!
        await checkTracking(this.deps.versions, server, version, body.track_latest, body.version, tx)
        const target = body.target ?? { kind: current.targetKind, index: current.targetIndex }
        const userScoped = body.user_scoped ?? current.inputs.filter((input) => input.scope === 'user').map((input) => input.key)
        const derived = deriveTarget(server, version, target, userScoped, body.user_scoped === undefined)
        Object.assign(patch, { versionId: version.id, targetKind: derived.target.kind, targetIndex: derived.target.index, transport: derived.transport, inputs: derived.inputs })
      }
      if (patch.inputs !== undefined || oauth !== undefined || body.team_connections !== undefined) {
        const kept = current.inputs.find((input) => input.kind === 'oauth')?.oauth ?? null
        const inputs = withOAuthInput(patch.inputs ?? current.inputs, oauth === undefined ? kept : oauth, [])
        const teamConnections = body.team_connections ?? current.inputs.filter((input) => input.kind === 'oauth' && input.scope === 'team' && inputs.some((next) => next.key === input.key)).map((input) => input.key)
        patch.inputs = scopedConnections(inputs, teamConnections)
        for (const key of endedConnectionKeys(current.inputs, patch.inputs)) {
          if (this.deps.endConnections === undefined) break
          const after = await this.deps.endConnections({ installationId: id, inputKey: key }, 'input_removed', tx)
          const previous = revoke
          revoke = async () => { await previous(); await after() }
        }
      }
      checkNetwork(patch.targetKind ?? current.targetKind, patch.network ?? current.network)
      const changed = (Object.keys(patch) as Array<keyof InstallationPatch>).filter((key) => !sameValue(patch[key], current[key]))
      if (changed.length === 0) return
      // Pinning changes what is offered, not what runs: alone, it moves no spec_revision.
      const updated = await installations.with(tx).update(id, patch, { respec: changed.some((key) => key !== 'pinTools'), now: this.now() })
      if (updated === 'name_taken') throw nameTaken(body.name!)
      if (updated === null) throw errors.notFound('Installation')
      if (changed.includes('pinTools') && this.deps.refreshHeld !== undefined) await this.deps.refreshHeld(tx, updated)
      if (patch.inputs !== undefined) await reconcileValues(installations.with(tx), this.deps.box, id, patch.inputs)
      if (changed.includes('satelliteId') && patch.satelliteId !== undefined && patch.satelliteId !== null) await this.deps.moves.dropUnapprovedOn(tx, { id, teamId }, patch.satelliteId, actor)
      await this.deps.stamps.with(tx).satellites([current.satelliteId, patch.satelliteId === undefined ? current.satelliteId : patch.satelliteId])
      await audit.record('installation.updated', {
        actorId: actor.userId, ip: actor.ip, target: id,
        details: {
          team_id: teamId, fields: Object.keys(body),
          ...(patch.satelliteId === undefined ? {} : { satellite_id: patch.satelliteId }), ...(patch.network === undefined ? {} : { network: patch.network }),
          ...(patch.pinTools === undefined ? {} : { pin_tools: patch.pinTools }),
        },
      }, tx)
    })
    await revoke()
    return this.deps.reads.get(teamId, id, actor)
  }

  /** Asks the satellite to restart the installation's instances (a new restart generation). */
  async restart(teamId: string, id: string, actor: UserActor): Promise<InstallationView> {
    await teamTransaction(this.deps, teamId, async (tx) => {
      const current = await lockedInstallation(this.deps.installations, teamId, id, tx)
      await this.deps.installations.with(tx).update(id, { restartGeneration: current.restartGeneration + 1 }, { respec: true, now: this.now() })
      await this.deps.stamps.with(tx).satellites([current.satelliteId])
      await this.deps.audit.record('installation.restarted', { actorId: actor.userId, ip: actor.ip, target: id, details: { team_id: teamId, restart_generation: current.restartGeneration + 1 } }, tx)
    })
    return this.deps.reads.get(teamId, id, actor)
  }

  /** Removes it with its values; its satellite stops it at its next poll. */
  async delete(teamId: string, id: string, actor: UserActor): Promise<void> {
    let revoke = async () => {}
    await teamTransaction(this.deps, teamId, async (tx) => {
      await lockedInstallation(this.deps.installations, teamId, id, tx)
      if (this.deps.endConnections !== undefined) revoke = await this.deps.endConnections({ installationId: id }, 'installation_deleted', tx)
      const row = await this.deps.installations.with(tx).delete(id)
      if (row === null) throw errors.notFound('Installation')
      await this.deps.stamps.with(tx).satellites([row.satelliteId])
      await this.deps.audit.record('installation.deleted', {
        actorId: actor.userId, ip: actor.ip, target: id, details: { team_id: teamId, name: row.name, server_id: row.serverId },
      }, tx)
    })
    await revoke()
  }

  /** The oauth input's details for a remote target (see oauthDetailsFor); request errors are left to the transaction. */
  private oauthDetails(teamId: string, serverId: string, version: string | undefined, target: InstallationTarget | undefined,
    values: Record<string, string | null>, auth: 'oauth' | undefined, current: readonly InstallationInput[]): Promise<OAuthInputDetails | null> {
    return oauthDetailsFor(this.deps.oauth, async () => {
      const server = await installableServer(this.deps.servers, serverId, teamId, this.deps.database.db)
      const row = await installableVersion(this.deps.versions, server, version, this.deps.database.db)
      return remoteOf(server, row, deriveTarget(server, row, target, [], true).target, values)
    }, auth, current)
  }

  /** Inserts under the first free name of `slug`, `slug-2`, `slug-3`… (the unique index decides). */
  private async insertWithFreeName(row: InstallationRow, slug: string, tx: Db): Promise<InstallationRow | null> {
    const installations = this.deps.installations.with(tx)
    const base = slug.slice(0, 56).replace(/-+$/, '') || 'server'
    const taken = new Set(await installations.namesLike(row.teamId, base))
    for (let n = 1; n < 10_000; n++) {
      const name = n === 1 ? base : `${base}-${n}`
      if (taken.has(name)) continue
      const inserted = await installations.insert({ ...row, name })
      if (inserted !== null) return inserted
    }
    return null
  }

  private now(): Date {
    return new Date(this.deps.clock.now())
  }
}

/** A remote is reached over the network: an instance without one could never reach it. */
function checkNetwork(kind: 'package' | 'remote', network: 'full' | 'none'): void {
  if (kind === 'remote' && network === 'none') {
    throw invalid('network', 'a remote target is reached over the network, so `none` would leave it unreachable; keep `full`, or choose a package target')
  }
}

const sameValue = (a: unknown, b: unknown): boolean => (typeof a === 'object' && a !== null ? JSON.stringify(a) === JSON.stringify(b) : a === b)
