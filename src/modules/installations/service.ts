import type { InstallationDetail, InstallationPage, InstallationPatch, InstallationRow, InstallationsRepository } from '../../db/repositories/installations.js'
import type { DesiredStamps } from '../../db/repositories/desired-stamps.js'
import type { ChannelRepository, InstanceLogRow } from '../../db/repositories/channel.js'
import type { ConnectionStatuses } from '../../db/repositories/connection-statuses.js'
import type { ReportedTool } from '../../formats/satellite-reports.js'
import type { SatellitesRepository } from '../../db/repositories/satellites.js'
import type { ServerRow } from '../../db/repositories/server-filters.js'
import type { ServerVersionsRepository, VersionRow } from '../../db/repositories/server-versions.js'
import type { ServersRepository } from '../../db/repositories/servers.js'
import type { TeamsRepository } from '../../db/repositories/teams.js'
import { newId } from '../../db/ids.js'
import type { Database, Db } from '../../db/types.js'
import type { InstallationInput } from '../../formats/installation-inputs.js'
import { errors } from '../../http/errors.js'
import type { Clock } from '../../lib/clock.js'
import type { AuditLog } from '../audit/service.js'
import { OFFLINE_AFTER_MS } from '../satellites/service.js'
import { deriveTarget, invalid, notInstallable, reconcileValues } from './derivation.js'
import type { ValueBox } from './sealed-values.js'
import type { CreateInstallationBody, InstallationView, UpdateInstallationBody } from './schemas.js'
import { checkValues, type ValueMap } from './values.js'
import { groupConnections, groupValues, inputView, installationView, satelliteOffline, usableOwn } from './views.js'
import { Placement, type PlacementRules } from './placement.js'
import { approvalFor } from './own-values.js'
import { InstallationMoves, type MovingSatellite } from './moves.js'
import type { ConnectionEnding } from '../../db/repositories/connections.js'
import type { InstallationTarget, OAuthInputDetails } from '../../formats/installation-inputs.js'
import { endedConnectionKeys, oauthDetailsFor, remoteOf, scopedConnections, withOAuthInput, type OAuthProbe } from './oauth-inputs.js'
import { lockedInstallation, teamTransaction } from './team-writes.js'
import { KeptLists } from './kept-lists.js'

/** A page of installations as the caller sees them. */
export interface InstallationList {
  views: InstallationView[]
  total: number
}

/** Who acts on installations, and from where (for the audit trail). */
export interface InstallationActor {
  userId: string
  isGlobalAdmin: boolean
  ip: string
}

export type { ValueMap } from './values.js'

/** What a client configuration lists: `<team slug>-<name>` → the endpoint. */
export type ClientServers = Record<string, { type: 'http'; url: string }>

const nameTaken = (name: string) => errors.conflict('INSTALLATION_NAME_TAKEN', `The team already has an installation named "${name}"; choose another name.`)

/**
 * The installations of teams: what each runs, with which values, where. No Fastify types here.
 * Every write runs in one transaction that first takes the team's row, so a team's installations
 * change one write at a time (names, placements, values) and a team being deleted waits for them.
 */
export class InstallationService {
  /** Lists answered again while nothing they show changed (kept-lists.ts). */
  private readonly lists: KeptLists<InstallationList>
  private readonly configs: KeptLists<ClientServers>

  constructor(private readonly deps: {
    database: Database
    installations: InstallationsRepository
    servers: ServersRepository
    versions: ServerVersionsRepository
    satellites: SatellitesRepository
    teams: TeamsRepository
    /** Marks the satellites whose desired-state documents a write changes. */
    stamps: DesiredStamps
    /** What satellites reported of the instances: tools and log lines. */
    channel: ChannelRepository
    /** Whether the OAuth connections installations need are live (their status `needs_auth`); absent: none are read. */
    connectionStatuses?: ConnectionStatuses
    box: ValueBox
    audit: AuditLog
    clock: Clock
    /** The global admins' placement settings, as they are now. */
    placementRules: () => Promise<PlacementRules>
    /** Learns whether a remote server asks for OAuth sign-in (absent: no oauth inputs are derived). */
    oauth?: OAuthProbe
    /** Finds again the tools held under pinning (tools-service.ts), when pin_tools changes. */
    refreshHeld?: (tx: Db, installation: InstallationRow) => Promise<unknown>
    /** Ends connections whose oauth input is gone (or changed scope), or whose installation is deleted. */
    endConnections?: ConnectionEnding
  }) {
    this.placement = new Placement({ installations: deps.installations, satellites: deps.satellites, rules: deps.placementRules, clock: deps.clock })
    this.moves = new InstallationMoves({ ...deps, placement: this.placement })
    this.lists = new KeptLists(deps.database, deps.clock, 'installation-lists')
    this.configs = new KeptLists(deps.database, deps.clock, 'client-configs')
  }

  private readonly placement: Placement
  private readonly moves: InstallationMoves

  // Reads

  /** A team's installations; the same list object again while nothing it shows changed. */
  async list(teamId: string, actor: InstallationActor, limit: number, offset: number): Promise<InstallationList> {
    return this.lists.read({ kind: 'team', teamId, viewer: actor.userId }, limit, offset, async () => {
      // A member reaches this only for a team that exists; a global admin passes the route's check
      // for any id, and an unknown team must be 404 for them too, not an empty list.
      if (actor.isGlobalAdmin && (await this.deps.teams.find(teamId)) === undefined) throw errors.notFound('Team')
      const page = await this.deps.installations.page({ team: teamId }, actor.userId, limit, offset)
      const list = { views: this.pageViews(page, await this.placement.rules(), await this.connectionsOf(page.rows, actor.userId)), total: page.total }
      return { list, rows: page.rows, teams: [teamId] }
    })
  }

  /** Every installation of every team the caller is a member of (or of one such team); kept like `list`. */
  async listMine(actor: InstallationActor, teamId: string | undefined, limit: number, offset: number): Promise<InstallationList> {
    return this.lists.read({ kind: 'mine', viewer: actor.userId, teamId }, limit, offset, async () => {
      // The teams first: a membership that changes meanwhile ends the list (member:<id>) either way.
      const teams = teamId !== undefined ? [teamId] : await this.deps.teams.idsFor(actor.userId)
      const page = await this.deps.installations.page({ member: actor.userId, team: teamId }, actor.userId, limit, offset)
      const list = { views: this.pageViews(page, await this.placement.rules(), await this.connectionsOf(page.rows, actor.userId)), total: page.total }
      return { list, rows: page.rows, teams }
    })
  }

  async get(teamId: string, id: string, actor: InstallationActor): Promise<InstallationView> {
    const [view] = await this.views([await this.detail(teamId, id, actor.userId)], actor.userId)
    return view!
  }

  /**
   * The installation's user-scoped inputs with the caller's own values: a value that may not be
   * used where the installation is now (dropped by a move) reads as unset, with the reason.
   */
  async myValues(teamId: string, id: string, actor: InstallationActor): Promise<InstallationView['inputs']> {
    const detail = await this.detail(teamId, id)
    const own = usableOwn(groupValues(await this.deps.installations.valuesOf([id], actor.userId)).get(id)?.own ?? new Map(), detail.satellite)
    return detail.installation.inputs.filter((input) => input.scope === 'user').map((input) => inputView(input, own.usable.get(input.key), own.dropped.has(input.key)))
  }

  /**
   * A client configuration for the caller's runnable installations (placed on a satellite with a
   * URL that is online, running, and configured for the caller): `<team slug>-<name>` → the
   * endpoint. URLs only. An offline satellite serves nothing, so its endpoints are left out.
   */
  async clientConfig(actor: InstallationActor, teamId: string | undefined): Promise<ClientServers> {
    return this.configs.read({ kind: 'client-config', viewer: actor.userId, teamId }, 0, 0, async () => {
      const teams = teamId !== undefined ? [teamId] : await this.deps.teams.idsFor(actor.userId)
      const servers: ClientServers = {}
      const rows: InstallationDetail[] = []
      const rules = await this.placement.rules()
      const silentSince = this.silentSince()
      for (let offset = 0; ; offset += 100) {
        const page = await this.deps.installations.page({ member: actor.userId, team: teamId }, actor.userId, 100, offset)
        const views = this.pageViews(page, rules, await this.connectionsOf(page.rows, actor.userId), silentSince)
        page.rows.forEach((detail, index) => {
          const view = views[index]!
          const online = detail.satellite !== null && !satelliteOffline(detail.satellite, silentSince)
          if (view.endpoint_url !== null && online && view.desired === 'running' && view.status !== 'needs_config' && view.status !== 'needs_auth') {
            servers[`${detail.team.slug}-${view.name}`] = { type: 'http', url: view.endpoint_url }
          }
        })
        rows.push(...page.rows)
        if (offset + 100 >= page.total) return { list: servers, rows, teams }
      }
    })
  }

  // Writes

  async create(teamId: string, body: CreateInstallationBody, actor: InstallationActor): Promise<InstallationView> {
    const { installations, audit } = this.deps
    const now = this.now()
    const rules = await this.placement.rules()
    // Outside the transaction: the probe may take seconds.
    const oauth = await this.oauthDetails(teamId, body.server_id, body.version, body.target, body.values ?? {}, body.auth, [])
    const id = await teamTransaction(this.deps, teamId, async (tx) => {
      const server = await this.installableServer(body.server_id, teamId, tx)
      const version = await this.installableVersion(server, body.version, tx)
      await this.checkTracking(server, version, body.track_latest, body.version, tx)
      const derived = deriveTarget(server, version, body.target, body.user_scoped ?? [])
      derived.inputs = scopedConnections(withOAuthInput(derived.inputs, oauth, []), body.team_connections ?? [])
      const problems = checkValues(derived.inputs, body.values ?? {}, 'team')
      if (problems.length > 0) throw errors.validation(problems)
      const network = body.network ?? 'full'
      checkNetwork(derived.target.kind, network)
      const satelliteId = await this.placement.choose({ teamId, visibility: server.visibility }, body.satellite_id, rules, tx)
      const row: InstallationRow = {
        id: newId(), teamId, serverId: server.id, versionId: version.id, name: '', trackLatest: body.track_latest ?? body.version === undefined,
        targetKind: derived.target.kind, targetIndex: derived.target.index, transport: derived.transport, inputs: derived.inputs,
        satelliteId, desired: body.desired ?? 'running', network, specRevision: 1, restartGeneration: 0, disabledTools: null, allowedTools: null, pinTools: false, heldTools: [], createdBy: actor.userId, createdAt: now, updatedAt: now,
      }
      const created = body.name !== undefined
        ? await installations.with(tx).insert({ ...row, name: body.name })
        : await this.insertWithFreeName(row, server.slug, tx)
      if (created === null) throw nameTaken(body.name!)
      await this.writeValues(tx, created.id, null, derived.inputs, body.values ?? {}, now, null)
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
    return this.get(teamId, id, actor)
  }

  /**
   * Changes what the body names. A new version, target or choice of user-scoped keys derives the
   * inputs again; the values of keys that remain (in the same scope) are kept, the others dropped.
   */
  async update(teamId: string, id: string, body: UpdateInstallationBody, actor: InstallationActor): Promise<InstallationView> {
    const { installations, audit } = this.deps
    const rules = await this.placement.rules()
    const before = (await this.detail(teamId, id)).installation
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
        patch.satelliteId = await this.placement.choose({ teamId, visibility, installationId: id }, body.satellite_id, rules, tx)
      }
      const rederive = body.version !== undefined || body.target !== undefined || body.user_scoped !== undefined || (body.track_latest === true && !current.trackLatest)
      if (rederive) {
        const server = await this.installableServer(current.serverId, teamId, tx)
        const following = patch.trackLatest ?? current.trackLatest
        const version = body.version !== undefined
          ? await this.installableVersion(server, body.version, tx)
          : following ? await this.installableVersion(server, undefined, tx) : (await this.deps.versions.with(tx).findById(current.versionId))!
        await this.checkTracking(server, version, body.track_latest, body.version, tx)
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
      if (changed.includes('satelliteId') && patch.satelliteId !== undefined && patch.satelliteId !== null) await this.moves.dropUnapprovedOn(tx, { id, teamId }, patch.satelliteId, actor)
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
    return this.get(teamId, id, actor)
  }

  /** The team's values (team-scoped keys), all or nothing. */
  async setValues(teamId: string, id: string, values: ValueMap, actor: InstallationActor): Promise<InstallationView> {
    await teamTransaction(this.deps, teamId, async (tx) => {
      const current = await lockedInstallation(this.deps.installations, teamId, id, tx)
      const problems = checkValues(current.inputs, values, 'team')
      if (problems.length > 0) throw errors.validation(problems)
      if (Object.keys(values).length === 0) return
      await this.writeValues(tx, id, null, current.inputs, values, this.now(), null)
      await this.deps.stamps.with(tx).satellites([current.satelliteId])
      await this.deps.installations.with(tx).update(id, {}, { respec: true, now: this.now() })
      await this.deps.audit.record('installation.values_set', {
        actorId: actor.userId, ip: actor.ip, target: id, details: { team_id: teamId, ...keysOf(values) },
      }, tx)
    })
    return this.get(teamId, id, actor)
  }

  /** The caller's own values of user-scoped keys; only a member of the team has any. */
  async setMyValues(teamId: string, id: string, values: ValueMap, actor: InstallationActor): Promise<InstallationView['inputs']> {
    await teamTransaction(this.deps, teamId, async (tx) => {
      if ((await this.deps.teams.with(tx).roleOf(actor.userId, teamId)) === null) {
        throw errors.forbidden({ required_role: 'team member' }, 'Forbidden: only members of the team set their own values.')
      }
      const current = await lockedInstallation(this.deps.installations, teamId, id, tx)
      const problems = checkValues(current.inputs, values, 'user')
      if (problems.length > 0) throw errors.validation(problems)
      if (Object.keys(values).length === 0) return
      // The member approves the satellite the installation is on now: their values are sealed to its key only (or to a global satellite).
      const satellite = current.satelliteId === null ? undefined : await this.deps.satellites.with(tx).find(current.satelliteId)
      const approved = approvalFor(satellite === undefined ? null : { type: satellite.satelliteType, publicKey: satellite.publicKey })
      await this.writeValues(tx, id, actor.userId, current.inputs, values, this.now(), approved)
      await this.deps.stamps.with(tx).satellites([current.satelliteId])
      await this.deps.installations.with(tx).update(id, {}, { respec: true, now: this.now() })
      await this.deps.audit.record('installation.my_values_set', {
        actorId: actor.userId, ip: actor.ip, target: id, details: { team_id: teamId, ...keysOf(values) },
      }, tx)
    })
    return this.myValues(teamId, id, actor)
  }

  /** Asks the satellite to restart the installation's instances (a new restart generation). */
  async restart(teamId: string, id: string, actor: InstallationActor): Promise<InstallationView> {
    await teamTransaction(this.deps, teamId, async (tx) => {
      const current = await lockedInstallation(this.deps.installations, teamId, id, tx)
      await this.deps.installations.with(tx).update(id, { restartGeneration: current.restartGeneration + 1 }, { respec: true, now: this.now() })
      await this.deps.stamps.with(tx).satellites([current.satelliteId])
      await this.deps.audit.record('installation.restarted', { actorId: actor.userId, ip: actor.ip, target: id, details: { team_id: teamId, restart_generation: current.restartGeneration + 1 } }, tx)
    })
    return this.get(teamId, id, actor)
  }

  /** Removes it with its values; its satellite stops it at its next poll. */
  async delete(teamId: string, id: string, actor: InstallationActor): Promise<void> {
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

  /**
   * The tools its satellite reported: of the shared instance, or of the caller's own instance of a
   * per-user installation (else of the member's instance reported last: the same server at the
   * same version serves the same tools).
   */
  async tools(teamId: string, id: string, actor: InstallationActor): Promise<ReportedTool[]> {
    await this.detail(teamId, id)
    const states = await this.deps.channel.allStatesOf(id)
    const seen = states.find((state) => state.userId === null || state.userId === actor.userId) ?? states[0]
    return seen?.tools ?? []
  }

  /**
   * Log lines, newest first: every instance's for the team's admins; a member who is not one reads
   * only the lines of their own instance of a per-user installation (403 for a shared one).
   */
  async logs(teamId: string, id: string, actor: InstallationActor, admin: boolean, limit: number, offset: number): Promise<{ rows: InstanceLogRow[]; total: number }> {
    const detail = await this.detail(teamId, id)
    const perUser = detail.installation.inputs.some((input) => input.scope === 'user')
    if (!admin && !perUser) throw errors.forbidden({ required_permission: 'team.installations.manage' })
    return this.deps.channel.logsOf(id, admin ? null : actor.userId, limit, offset)
  }

  // Hooks of other parts

  /** A satellite sent a heartbeat (see InstallationMoves). */
  placeWaiting(satellite: MovingSatellite): Promise<void> {
    return this.moves.placeWaiting(satellite)
  }

  /** A satellite (re-)registered (see InstallationMoves). */
  releaseFrom(satellite: MovingSatellite): Promise<void> {
    return this.moves.releaseFrom(satellite)
  }

  /** Run in the transaction writing `global.team_servers_on_global_satellites` (see InstallationMoves). */
  teamServersSettingWritten(allowed: boolean, tx: Db): Promise<() => Promise<void>> {
    return this.moves.teamServersSettingWritten(allowed, tx)
  }

  /** A satellite was disabled: its installations are placed again the automatic way. */
  releaseSatellite(satelliteId: string): Promise<void> {
    return this.moves.releaseSatellite(satelliteId)
  }

  /** Places whatever waits, on any online satellite. */
  placeAllWaiting(): Promise<void> {
    return this.moves.placeAllWaiting()
  }

  // Parts

  /** The oauth input's details for a remote target (see oauthDetailsFor); request errors are left to the transaction. */
  private oauthDetails(teamId: string, serverId: string, version: string | undefined, target: InstallationTarget | undefined,
    values: Record<string, string | null>, auth: 'oauth' | undefined, current: readonly InstallationInput[]): Promise<OAuthInputDetails | null> {
    return oauthDetailsFor(this.deps.oauth, async () => {
      const server = await this.installableServer(serverId, teamId, this.deps.database.db)
      const row = await this.installableVersion(server, version, this.deps.database.db)
      return remoteOf(server, row, deriveTarget(server, row, target, [], true).target, values)
    }, auth, current)
  }

  private async views(rows: InstallationDetail[], userId: string): Promise<InstallationView[]> {
    const [values, rules, connections] = await Promise.all([
      this.deps.installations.valuesOf(rows.map((row) => row.installation.id), userId), this.placement.rules(), this.connectionsOf(rows, userId),
    ])
    return this.pageViews({ rows, values }, rules, connections)
  }

  /** The team's and the caller's connections of those installations that have oauth inputs (one query, none when no row has one). */
  private async connectionsOf(rows: readonly InstallationDetail[], userId: string): Promise<ReturnType<typeof groupConnections>> {
    const ids = rows.filter((row) => row.installation.inputs.some((input) => input.kind === 'oauth')).map((row) => row.installation.id)
    if (ids.length === 0 || this.deps.connectionStatuses === undefined) return new Map()
    return groupConnections(await this.deps.connectionStatuses.of(ids, userId))
  }

  /** The instant before which a satellite's last heartbeat means it is offline. */
  private silentSince(): Date {
    return new Date(this.deps.clock.now() - OFFLINE_AFTER_MS)
  }

  /** The views of rows read with the values their reader sees. */
  private pageViews(
    { rows, values }: Pick<InstallationPage, 'rows' | 'values'>, rules: PlacementRules, connections: ReturnType<typeof groupConnections>, silentSince = this.silentSince(),
  ): InstallationView[] {
    const byInstallation = groupValues(values)
    return rows.map((row) => installationView(row, byInstallation.get(row.installation.id), silentSince, rules, row.state, connections.get(row.installation.id)))
  }

  private async detail(teamId: string, id: string, viewer?: string): Promise<InstallationDetail> {
    const detail = await this.deps.installations.find(teamId, id, viewer)
    if (detail === undefined) throw errors.notFound('Installation')
    return detail
  }



  /** A server the team may install: a global one, or one of the team's own; any other is 404. */
  private async installableServer(idOrSlug: string, teamId: string, tx: Db): Promise<ServerRow> {
    const server = await this.deps.servers.with(tx).find(idOrSlug, { userId: '', isGlobalAdmin: true })
    if (server === undefined || (server.visibility === 'team' && server.ownerTeamId !== teamId)) throw errors.notFound('Server')
    if (server.status === 'disabled') throw notInstallable(`The server "${server.slug}" is disabled in the catalogue; it cannot be installed or changed to another version.`)
    return server
  }

  /** The exact version asked for, or the latest; it must be active. */
  private async installableVersion(server: ServerRow, version: string | undefined, tx: Db): Promise<VersionRow> {
    const versions = this.deps.versions.with(tx)
    if (version === undefined) {
      const latest = await versions.latest(server.id)
      if (latest === undefined) throw notInstallable(`The server "${server.slug}" has no active version to install.`)
      return latest
    }
    const row = await versions.findByVersion(server.id, version)
    if (row === undefined) throw invalid('version', `the server "${server.slug}" has no version "${version}"`)
    if (row.status !== 'active') throw notInstallable(`Version ${row.version} of "${server.slug}" is ${row.status}; only active versions can be installed.`)
    return row
  }

  /** An explicit version and `track_latest: true` together must name the latest version (else the two contradict each other). */
  private async checkTracking(server: ServerRow, version: VersionRow, trackLatest: boolean | undefined, asked: string | undefined, tx: Db): Promise<void> {
    if (trackLatest !== true || asked === undefined) return
    const latest = await this.deps.versions.with(tx).latest(server.id)
    if (latest?.id !== version.id) {
      throw invalid('track_latest', `follows the latest version (${latest?.version ?? 'none'}); give either a version to pin or track_latest: true, not ${version.version} with it`)
    }
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

  /** Writes checked values: null unsets; a secret input's value is sealed to its place. `approvedKey`: a member's, the satellite key they set it for. */
  private async writeValues(tx: Db, installationId: string, userId: string | null, inputs: readonly InstallationInput[], values: ValueMap, now: Date, approvedKey: string | null): Promise<void> {
    const installations = this.deps.installations.with(tx)
    for (const [key, value] of Object.entries(values)) {
      if (value === null) {
        await installations.deleteValue(installationId, userId, key)
        continue
      }
      const secret = inputs.find((input) => input.key === key)?.secret ?? true
      await installations.putValue({
        installationId, userId, key, updatedAt: now, approvedKey,
        value: secret ? null : value,
        sealed: secret ? this.deps.box.seal(value, { installationId, userId, key }) : null,
      })
    }
  }

  private now(): Date {
    return new Date(this.deps.clock.now())
  }
}

/** The audit details of a values write: which keys were set and which unset, never a value. */
const keysOf = (values: ValueMap) => ({
  set: Object.keys(values).filter((key) => values[key] !== null),
  unset: Object.keys(values).filter((key) => values[key] === null),
})

/** A remote is reached over the network: an instance without one could never reach it. */
function checkNetwork(kind: 'package' | 'remote', network: 'full' | 'none'): void {
  if (kind === 'remote' && network === 'none') {
    throw invalid('network', 'a remote target is reached over the network, so `none` would leave it unreachable; keep `full`, or choose a package target')
  }
}

const sameValue = (a: unknown, b: unknown): boolean => (typeof a === 'object' && a !== null ? JSON.stringify(a) === JSON.stringify(b) : a === b)
