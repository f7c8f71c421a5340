import type { UserActor } from '../../auth/caller.js'
import type { ChannelRepository, InstanceLogRow } from '../../db/repositories/channel.js'
import type { ConnectionStatuses } from '../../db/repositories/connection-statuses.js'
import type { InstallationDetail, InstallationPage, InstallationsRepository } from '../../db/repositories/installations.js'
import type { TeamsRepository } from '../../db/repositories/teams.js'
import type { Database } from '../../db/types.js'
import type { ReportedTool } from '../../formats/satellite-reports.js'
import { errors } from '../../http/errors.js'
import type { Clock } from '../../lib/clock.js'
import { OFFLINE_AFTER_MS } from '../satellites/service.js'
import type { Placement, PlacementRules } from './placement.js'
import type { InstallationView } from './schemas.js'
import { KeptLists } from './kept-lists.js'
import { groupConnections, groupValues, inputView, installationView, satelliteOffline, usableOwn } from './views.js'

/** A page of installations as the caller sees them. */
export interface InstallationList {
  views: InstallationView[]
  total: number
}

/** What a client configuration lists: `<team slug>-<name>` → the endpoint. */
export type ClientServers = Record<string, { type: 'http'; url: string }>

/**
 * Installations as a caller reads them: lists, one installation, the caller's own values, the
 * client configuration, and what satellites reported (tools, log lines). Every view is derived
 * when read, from the caller's point of view (views.ts).
 */
export class InstallationReads {
  /** Lists answered again while nothing they show changed (kept-lists.ts). */
  private readonly lists: KeptLists<InstallationList>
  private readonly configs: KeptLists<ClientServers>

  constructor(private readonly deps: {
    database: Database
    installations: InstallationsRepository
    teams: TeamsRepository
    /** What satellites reported of the instances: tools and log lines. */
    channel: ChannelRepository
    /** Whether the OAuth connections installations need are live (their status `needs_auth`); absent: none are read. */
    connectionStatuses?: ConnectionStatuses
    clock: Clock
    placement: Pick<Placement, 'rules'>
  }) {
    this.lists = new KeptLists(deps.database, deps.clock, 'installation-lists')
    this.configs = new KeptLists(deps.database, deps.clock, 'client-configs')
  }

  /** A team's installations; the same list object again while nothing it shows changed. */
  async list(teamId: string, actor: UserActor, limit: number, offset: number): Promise<InstallationList> {
    return this.lists.read({ kind: 'team', teamId, viewer: actor.userId }, limit, offset, async () => {
      // A member reaches this only for a team that exists; a global admin passes the route's check
      // for any id, and an unknown team must be 404 for them too, not an empty list.
      if (actor.isGlobalAdmin && (await this.deps.teams.find(teamId)) === undefined) throw errors.notFound('Team')
      const page = await this.deps.installations.page({ team: teamId }, actor.userId, limit, offset)
      const list = { views: this.pageViews(page, await this.deps.placement.rules(), await this.connectionsOf(page.rows, actor.userId)), total: page.total }
      return { list, rows: page.rows, teams: [teamId] }
    })
  }

  /** Every installation of every team the caller is a member of (or of one such team); kept like `list`. */
  async listMine(actor: UserActor, teamId: string | undefined, limit: number, offset: number): Promise<InstallationList> {
    return this.lists.read({ kind: 'mine', viewer: actor.userId, teamId }, limit, offset, async () => {
      // The teams first: a membership that changes meanwhile ends the list (member:<id>) either way.
      const teams = teamId !== undefined ? [teamId] : await this.deps.teams.idsFor(actor.userId)
      const page = await this.deps.installations.page({ member: actor.userId, team: teamId }, actor.userId, limit, offset)
      const list = { views: this.pageViews(page, await this.deps.placement.rules(), await this.connectionsOf(page.rows, actor.userId)), total: page.total }
      return { list, rows: page.rows, teams }
    })
  }

  async get(teamId: string, id: string, actor: UserActor): Promise<InstallationView> {
    const [view] = await this.views([await this.detail(teamId, id, actor.userId)], actor.userId)
    return view!
  }

  /**
   * The installation's user-scoped inputs with the caller's own values: a value that may not be
   * used where the installation is now (dropped by a move) reads as unset, with the reason.
   */
  async myValues(teamId: string, id: string, actor: UserActor): Promise<InstallationView['inputs']> {
    const detail = await this.detail(teamId, id)
    const own = usableOwn(groupValues(await this.deps.installations.valuesOf([id], actor.userId)).get(id)?.own ?? new Map(), detail.satellite)
    return detail.installation.inputs.filter((input) => input.scope === 'user').map((input) => inputView(input, own.usable.get(input.key), own.dropped.has(input.key)))
  }

  /**
   * A client configuration for the caller's runnable installations (placed on a satellite with a
   * URL that is online, running, and configured for the caller): `<team slug>-<name>` → the
   * endpoint. URLs only. An offline satellite serves nothing, so its endpoints are left out.
   */
  async clientConfig(actor: UserActor, teamId: string | undefined): Promise<ClientServers> {
    return this.configs.read({ kind: 'client-config', viewer: actor.userId, teamId }, 0, 0, async () => {
      const teams = teamId !== undefined ? [teamId] : await this.deps.teams.idsFor(actor.userId)
      const servers: ClientServers = {}
      const rows: InstallationDetail[] = []
      const rules = await this.deps.placement.rules()
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

  /**
   * The tools its satellite reported: of the shared instance, or of the caller's own instance of a
   * per-user installation (else of the member's instance reported last: the same server at the
   * same version serves the same tools).
   */
  async tools(teamId: string, id: string, actor: UserActor): Promise<ReportedTool[]> {
    await this.detail(teamId, id)
    const states = await this.deps.channel.allStatesOf(id)
    const seen = states.find((state) => state.userId === null || state.userId === actor.userId) ?? states[0]
    return seen?.tools ?? []
  }

  /**
   * Log lines, newest first: every instance's for the team's admins; a member who is not one reads
   * only the lines of their own instance of a per-user installation (403 for a shared one).
   */
  async logs(teamId: string, id: string, actor: UserActor, admin: boolean, limit: number, offset: number): Promise<{ rows: InstanceLogRow[]; total: number }> {
    const detail = await this.detail(teamId, id)
    const perUser = detail.installation.inputs.some((input) => input.scope === 'user')
    if (!admin && !perUser) throw errors.forbidden({ required_permission: 'team.installations.manage' })
    return this.deps.channel.logsOf(id, admin ? null : actor.userId, limit, offset)
  }

  /** The installation with its server, version and satellite (and the state `viewer` sees); 404 when the team has none such. */
  async detail(teamId: string, id: string, viewer?: string): Promise<InstallationDetail> {
    const detail = await this.deps.installations.find(teamId, id, viewer)
    if (detail === undefined) throw errors.notFound('Installation')
    return detail
  }

  private async views(rows: InstallationDetail[], userId: string): Promise<InstallationView[]> {
    const [values, rules, connections] = await Promise.all([
      this.deps.installations.valuesOf(rows.map((row) => row.installation.id), userId), this.deps.placement.rules(), this.connectionsOf(rows, userId),
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
}
