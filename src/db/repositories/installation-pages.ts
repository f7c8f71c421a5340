import { and, asc, count, eq, getTableColumns, inArray, isNull, sql, type SQL } from 'drizzle-orm'
import { LRUCache } from 'lru-cache'
import type { InstallationInput } from '../../formats/installation-inputs.js'
import { UNRESOLVED_SPEC_HASH, type ReportedState } from '../../formats/satellite-reports.js'
import type { Database, Db } from '../types.js'
import type { InstallationRow } from './installation-rows.js'
import { valueHeld, type SetValue } from './installation-values.js'

/** What a reader of an installation sees with it: its server, its version string and its satellite. */
export interface InstallationDetail {
  installation: InstallationRow
  server: { id: string; slug: string; name: string }
  /** `team`: a server the team defined itself (it runs on a global satellite only where the rules allow). */
  serverVisibility: 'global' | 'team'
  version: string
  satellite: {
    name: string; url: string | null; status: string; lastHeartbeatAt: Date | null; disabledAt: Date | null; offlineAt: Date | null
    type: 'global' | 'team'; publicKey: string | null
  } | null
  team: { slug: string }
  /** What the satellite last reported of the instance the reader sees (the shared one, or their own); absent before any report. */
  state?: ReportedState
}

/** One page of a list: its installations, the values the caller sees of them, and how many the whole list holds. */
export interface InstallationPage {
  rows: InstallationDetail[]
  values: SetValue[]
  total: number
}

/** Which list a page is of: a team's, or the installations of every team of a member (or of one of them). */
export type ListScope = { team: string } | { member: string; team?: string }

/**
 * The inputs of installations as the lists read them, parsed once per stored text. A list parses
 * the inputs of every row it shows on every read, though an installation's text changes only with
 * its inputs (and the installations of one version share it); keyed by the text itself, a kept
 * value is never stale. Frozen, since readers share them. A typical server's take about 2 KB with
 * their text (measured with seven inputs), so 500 of them hold about 1 MB.
 */
const parsedInputs = new LRUCache<string, InstallationInput[]>({ max: 500 })

function inputsFromText(text: string): InstallationInput[] {
  let inputs = parsedInputs.get(text)
  if (inputs === undefined) {
    inputs = Object.freeze((JSON.parse(text) as InstallationInput[]).map((input) => {
      if (input.choices !== undefined) Object.freeze(input.choices)
      return Object.freeze(input)
    })) as InstallationInput[]
    parsedInputs.set(text, inputs)
  }
  return inputs
}

/**
 * Installations as readers see them: one, or a page of a list, each with its server, version,
 * team and satellite, the state reported of the instance the reader sees and (on a page) the
 * values the reader sees.
 */
export function installationPages(database: Database, db: Db = database.db) {
  const { t, dialect } = database
  const i = t.mcpInstallations
  const values = t.mcpInstallationValues

  const detailColumns = {
    installation: i,
    server: { id: t.mcpServers.id, slug: t.mcpServers.slug, name: t.mcpServers.name },
    serverVisibility: t.mcpServers.visibility,
    version: t.mcpServerVersions.version,
    satelliteId: t.satellites.id,
    satelliteType: t.satellites.satelliteType,
    satellitePublicKey: t.satellites.publicKey,
    satelliteName: t.satellites.name,
    satelliteUrl: t.satellites.satelliteUrl,
    satelliteStatus: t.satellites.status,
    lastHeartbeatAt: t.satellites.lastHeartbeatAt,
    disabledAt: t.satellites.disabledAt,
    offlineAt: t.satellites.offlineAt,
    teamSlug: t.teams.slug,
  }
  const detail = () => db
    .select(detailColumns)
    .from(i)
    .innerJoin(t.mcpServers, eq(t.mcpServers.id, i.serverId))
    .innerJoin(t.mcpServerVersions, eq(t.mcpServerVersions.id, i.versionId))
    .innerJoin(t.teams, eq(t.teams.id, i.teamId))
    .leftJoin(t.satellites, eq(t.satellites.id, i.satelliteId))

  type DetailRow = Awaited<ReturnType<ReturnType<typeof detail>['execute']>>[number]
  const toDetail = (row: DetailRow): InstallationDetail => ({
    installation: row.installation,
    server: row.server,
    serverVisibility: row.serverVisibility,
    version: row.version,
    team: { slug: row.teamSlug },
    satellite: row.satelliteId === null ? null : {
      name: row.satelliteName!, url: row.satelliteUrl, status: row.satelliteStatus!, lastHeartbeatAt: row.lastHeartbeatAt, disabledAt: row.disabledAt, offlineAt: row.offlineAt,
      type: row.satelliteType!, publicKey: row.satellitePublicKey,
    },
  })
  const byName = [asc(i.name), asc(i.id)]

  // A page of a list in one statement, prepared once per kind of list (PostgreSQL plans it once
  // per connection): the page's ids are picked first, sorting only the narrow columns of the
  // whole list, then only those rows are joined to their server, version, team and satellite,
  // with the total and the values the viewer sees (as JSON arrays) in the same row.
  type PageKind = 'team' | 'member' | 'memberTeam'
  const placeholder = (name: string) => sql.placeholder(name)
  const scoped = (kind: PageKind): SQL => {
    const ofMember = inArray(i.teamId, db.select({ teamId: t.teamMembers.teamId }).from(t.teamMembers).where(eq(t.teamMembers.userId, placeholder('member'))))
    if (kind === 'member') return ofMember
    if (kind === 'memberTeam') return and(eq(i.teamId, placeholder('team')), ofMember)!
    return eq(i.teamId, placeholder('team'))
  }
  const held = valueHeld(values)
  /**
   * `[key, value, held, approved key]` of each value of the row's installation that `whose` keeps
   * (`value` null for a secret; `held` false for a member's value dropped by a move).
   */
  const valuePairs = (whose: SQL) => (dialect === 'postgresql'
    ? sql`(select coalesce(json_agg(json_build_array(${values.key}, ${values.value}, ${held}, ${values.approvedKey})), '[]'::json) from ${values} where ${values.installationId} = ${i.id} and ${whose})`
    : sql`(select json_group_array(json_array(${values.key}, ${values.value}, ${held}, ${values.approvedKey})) from ${values} where ${values.installationId} = ${i.id} and ${whose})`
  ).mapWith((pairs: unknown) => (typeof pairs === 'string' ? JSON.parse(pairs) : pairs) as Array<[string, string | null, boolean | number, string | null]>)
  /**
   * The reported state the viewer sees: their own instance's (a per-user installation), else the
   * shared one's, as `[phase, message, spec_revision, tools count, spec_hash]`.
   */
  const statePair = (viewer: SQL | string) => {
    const st = t.mcpInstanceStates
    const tools = dialect === 'postgresql' ? sql`jsonb_array_length(${st.tools})` : sql`json_array_length(${st.tools})`
    const pair = dialect === 'postgresql'
      ? sql`json_build_array(${st.phase}, ${st.message}, ${st.specRevision}, ${tools}, ${st.specHash})`
      : sql`json_array(${st.phase}, ${st.message}, ${st.specRevision}, ${tools}, ${st.specHash})`
    return sql`(select ${pair} from ${st} where ${st.installationId} = ${i.id} and (${st.userId} is null or ${st.userId} = ${viewer}) order by (${st.userId} is null) limit 1)`
      .mapWith((found: unknown): ReportedState | undefined => {
        if (found === null || found === undefined) return undefined
        const [phase, message, specRevision, toolsCount, specHash] = (typeof found === 'string' ? JSON.parse(found) : found) as [ReportedState['phase'], string | null, number, number, string]
        return { phase, message, specRevision: Number(specRevision), toolsCount: Number(toolsCount), unresolved: specHash === UNRESOLVED_SPEC_HASH }
      })
  }
  /** The stored text of `inputs` (PostgreSQL's jsonb would come parsed already). */
  const inputsAsText = dialect === 'postgresql' ? sql<string>`${i.inputs}::text` : sql<string>`${i.inputs}`
  const countOf = (kind: PageKind) => db.select({ n: count().as('n') }).from(i).where(scoped(kind))
  const preparePage = (kind: PageKind) => {
    const page = db.$with('page').as(db
      .select({ id: i.id })
      .from(i)
      .innerJoin(t.teams, eq(t.teams.id, i.teamId))
      .where(scoped(kind))
      .orderBy(asc(t.teams.slug), ...byName)
      .limit(placeholder('limit'))
      .offset(placeholder('offset')))
    const total = db.$with('total').as(countOf(kind))
    return db
      .with(page, total)
      .select({
        ...detailColumns,
        installation: { ...getTableColumns(i), inputs: inputsAsText.mapWith(inputsFromText) },
        teamValues: valuePairs(isNull(values.userId)),
        ownValues: valuePairs(sql`${values.userId} = ${placeholder('viewer')}`),
        state: statePair(sql`${placeholder('viewer')}`),
        total: total.n,
      })
      .from(page)
      .innerJoin(i, eq(i.id, page.id))
      .innerJoin(t.mcpServers, eq(t.mcpServers.id, i.serverId))
      .innerJoin(t.mcpServerVersions, eq(t.mcpServerVersions.id, i.versionId))
      .innerJoin(t.teams, eq(t.teams.id, i.teamId))
      .leftJoin(t.satellites, eq(t.satellites.id, i.satelliteId))
      .crossJoin(total)
      .orderBy(asc(t.teams.slug), ...byName)
      .prepare(`installations_page_${kind}`)
  }
  const prepareTotal = (kind: PageKind) => countOf(kind).prepare(`installations_total_${kind}`)
  const pageStatements: Partial<Record<PageKind, ReturnType<typeof preparePage>>> = {}
  const totalStatements: Partial<Record<PageKind, ReturnType<typeof prepareTotal>>> = {}

  return {
    /** One installation, with the reported state `viewer` sees. */
    async find(teamId: string, id: string, viewer = ''): Promise<InstallationDetail | undefined> {
      const [row] = await db
        .select({ ...detailColumns, state: statePair(viewer) })
        .from(i)
        .innerJoin(t.mcpServers, eq(t.mcpServers.id, i.serverId))
        .innerJoin(t.mcpServerVersions, eq(t.mcpServerVersions.id, i.versionId))
        .innerJoin(t.teams, eq(t.teams.id, i.teamId))
        .leftJoin(t.satellites, eq(t.satellites.id, i.satelliteId))
        .where(and(eq(i.teamId, teamId), eq(i.id, id)))
      return row === undefined ? undefined : { ...toDetail(row), ...(row.state == null ? {} : { state: row.state }) }
    },

    /**
     * A page of a list by team, then name: a team's installations (`{ team }`), or those of every
     * team `member` belongs to (or of the one of them named by `team`). With each installation,
     * the values `viewer` sees: the team's and the viewer's own, never another member's.
     */
    async page(scope: ListScope, viewer: string, limit: number, offset: number): Promise<InstallationPage> {
      const kind = 'member' in scope ? (scope.team === undefined ? 'member' : 'memberTeam') : 'team'
      const statement = (pageStatements[kind] ??= preparePage(kind))
      const params = { viewer, member: 'member' in scope ? scope.member : '', team: scope.team ?? '', limit, offset }
      const found = await statement.execute(params)
      const rows = found.map((row): InstallationDetail => ({ ...toDetail(row), ...(row.state == null ? {} : { state: row.state }) }))
      const values = found.flatMap((row) => [
        ...row.teamValues.map(([key, value, kept, approvedKey]): SetValue => ({ installationId: row.installation.id, userId: null, key, value, held: Boolean(kept), approvedKey })),
        ...row.ownValues.map(([key, value, kept, approvedKey]): SetValue => ({ installationId: row.installation.id, userId: viewer, key, value, held: Boolean(kept), approvedKey })),
      ])
      // An empty page (past the end, or an empty list) has no row to carry the total.
      const total = found[0]?.total ?? (await (totalStatements[kind] ??= prepareTotal(kind)).execute(params))[0]?.n ?? 0
      return { rows, values, total }
    },
  }
}
