import type { CallerTeam } from '../db/repositories/teams.js'
import type { ServingSatellite } from '../db/repositories/resource-teams.js'
import type { OAuthDeps } from './deps.js'

/** A team on the consent page; exactly one is `selected` when the user has any. */
export interface TeamOption {
  id: string
  name: string
  selected: boolean
}

export interface TeamChoice {
  teams: TeamOption[]
  /** The preselected team: what an approval without `team_id` binds. Null only for a user with no team. */
  selected: { id: string; name: string } | null
  /** The team the request's resource names, for this user; null when it names none of theirs. */
  named: string | null
  /**
   * The satellite whose MCP endpoints the resource identifies, when the user may know it: a global
   * satellite (they serve every team), or a team satellite of one of the user's teams.
   */
  satellite: { name: string } | null
}

/** What a resource identifier says about satellites: `<satellite_url>/mcp`, or one endpoint `<satellite_url>/mcp/<installation id>`. */
type McpTarget = { base: string; installationId?: string }

const MCP_PATH = '/mcp'

/**
 * The satellite URL (and installation) a resource identifier is built from, or null. A trailing
 * slash does not make another resource. Matching is exact otherwise, as a satellite's
 * introspection compares audiences exactly: a resource spelled differently is not that
 * satellite's, and no token for it would ever be admitted there.
 */
export function mcpTarget(resource: string | null): McpTarget | null {
  if (resource === null) return null
  const value = resource.replace(/\/+$/, '')
  if (value.endsWith(MCP_PATH)) return value.length > MCP_PATH.length ? { base: value.slice(0, -MCP_PATH.length) } : null
  const slash = value.lastIndexOf('/')
  const head = value.slice(0, slash)
  const installationId = value.slice(slash + 1)
  if (slash < 0 || !head.endsWith(MCP_PATH) || head.length === MCP_PATH.length || /[?#]/.test(installationId)) return null
  return { base: head.slice(0, -MCP_PATH.length), installationId }
}

interface Named {
  teamId: string | null
  satellite: ServingSatellite | null
}

const NOTHING_NAMED: Named = { teamId: null, satellite: null }

/**
 * Which of a user's teams an authorization is for, so that approving the page as it comes binds
 * the token to the team that can use it. In order: the team the request's resource (RFC 8707)
 * names — a team satellite's team, the team with installations on a global satellite, an
 * endpoint's installation's team — when the user is a member of it; else the team the user chose
 * last time for this client; else a team of the user that has installations (the default team if
 * it has some); else the default team. Only teams the user is a member of are ever chosen: a
 * resource naming another team's satellite falls through to the next rule.
 */
export class TeamChooser {
  constructor(private readonly deps: Pick<OAuthDeps, 'teams' | 'repository' | 'resourceTeams'>) {}

  async choose(userId: string, clientId: string, resource: string | null): Promise<TeamChoice> {
    const teams = await this.deps.teams.forUser(userId)
    const members = new Set(teams.map((team) => team.id))
    const remembered = (await this.deps.repository.findConsent(userId, clientId))?.teamId ?? null
    const lastChosen = remembered !== null && members.has(remembered) ? remembered : null
    const named = await this.named(teams, resource, lastChosen)
    const selectedId = named.teamId ?? lastChosen ?? (await this.withInstallations(teams)) ?? defaultTeam(teams)?.id ?? null
    const selected = teams.find((team) => team.id === selectedId) ?? null
    return {
      teams: teams.map((team) => ({ id: team.id, name: team.name, selected: team.id === selectedId })),
      selected: selected === null ? null : { id: selected.id, name: selected.name },
      named: named.teamId,
      satellite: named.satellite === null ? null : { name: named.satellite.name },
    }
  }

  /** Rule one: the team the resource names, among the user's. */
  private async named(teams: readonly CallerTeam[], resource: string | null, lastChosen: string | null): Promise<Named> {
    const target = mcpTarget(resource)
    if (target === null) return NOTHING_NAMED
    const members = new Set(teams.map((team) => team.id))
    if (target.installationId !== undefined) {
      const placed = await this.deps.resourceTeams.placement(target.installationId)
      if (placed?.satellite?.url === target.base && members.has(placed.teamId)) return { teamId: placed.teamId, satellite: placed.satellite }
      // Not one of the user's installations there: the URL still names the satellite.
    }
    const satellites = await this.deps.resourceTeams.satellitesAt(target.base)
    if (satellites.length === 0) return NOTHING_NAMED
    const ownSatellites = satellites.filter((satellite) => satellite.satelliteType === 'team' && satellite.teamId !== null && members.has(satellite.teamId))
    const global = satellites.find((satellite) => satellite.satelliteType === 'global') ?? null
    // Only the user's teams are counted; another team's satellite runs none of theirs.
    const counts = await this.deps.resourceTeams.installationCounts([...members], satellites.map((satellite) => satellite.id))
    const candidates = new Set([...ownSatellites.map((satellite) => satellite.teamId!), ...counts.keys()])
    if (candidates.size === 0) return { teamId: null, satellite: global }
    const teamId = lastChosen !== null && candidates.has(lastChosen) ? lastChosen : mostInstallations(teams.filter((team) => candidates.has(team.id)), counts)
    const serving = ownSatellites.find((satellite) => satellite.teamId === teamId) ?? global
    return { teamId, satellite: serving }
  }

  /** Rule three: the default team if it has installations, else the team with the most. */
  private async withInstallations(teams: readonly CallerTeam[]): Promise<string | null> {
    const counts = await this.deps.resourceTeams.installationCounts(teams.map((team) => team.id))
    if (counts.size === 0) return null
    const preferred = defaultTeam(teams)
    if (preferred !== undefined && counts.has(preferred.id)) return preferred.id
    return mostInstallations(teams.filter((team) => counts.has(team.id)), counts)
  }
}

const defaultTeam = (teams: readonly CallerTeam[]): CallerTeam | undefined => teams.find((team) => team.isDefault) ?? teams[0]

/** The team with the most installations; a tie goes to the earlier one in the user's list (default team first, then by name). */
function mostInstallations(teams: readonly CallerTeam[], counts: ReadonlyMap<string, number>): string {
  let best = teams[0]!
  for (const team of teams) if ((counts.get(team.id) ?? 0) > (counts.get(best.id) ?? 0)) best = team
  return best.id
}
