import { and, asc, count, eq, getTableColumns, gte, inArray, isNotNull, isNull, ne, or, sql, type SQL } from 'drizzle-orm'
import { LRUCache } from 'lru-cache'
import type { InstallationInput } from '../../formats/installation-inputs.js'
import { violatedUniqueIndex } from '../errors.js'
import type { Database, Db } from '../types.js'
import { UNRESOLVED_SPEC_HASH, type ReportedState } from '../../formats/satellite-reports.js'

export type InstallationRow = Database['t']['mcpInstallations']['$inferSelect']
export type InstallationPatch = Partial<Pick<InstallationRow,
  'name' | 'versionId' | 'trackLatest' | 'targetKind' | 'targetIndex' | 'transport' | 'inputs' | 'satelliteId' | 'desired' | 'network' | 'restartGeneration'
  | 'disabledTools' | 'allowedTools' | 'pinTools' | 'heldTools'>>
export type ValueRow = Database['t']['mcpInstallationValues']['$inferSelect']

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

/** A value as readers see it: never the sealed secret, only that it is set. */
export interface SetValue {
  installationId: string
  userId: string | null
  key: string
  /** The plain value of a non-secret input; null for a secret one. */
  value: string | null
  /** False for a member's value dropped when the installation moved (the row remains so that the member is told). */
  held: boolean
  /** A member's own value: the fingerprint of the satellite key it was set for. */
  approvedKey: string | null
}

/** One page of a list: its installations, the values the caller sees of them, and how many the whole list holds. */
export interface InstallationPage {
  rows: InstallationDetail[]
  values: SetValue[]
  total: number
}

/** Which list a page is of: a team's, or the installations of every team of a member (or of one of them). */
export type ListScope = { team: string } | { member: string; team?: string }

/** A satellite an installation may be placed on, with its load. */
export interface SatelliteLoad {
  id: string
  name: string
  teamId: string | null
  satelliteType: 'global' | 'team'
  isolation: 'none' | 'process-sandbox' | 'container'
  /** Installations placed on it (the one being placed again left out). */
  installations: number
  /** Of those, the team's. */
  ofTeam: number
}

/** An unplaced installation, with what placement needs to know of its server. */
export interface Unplaced {
  id: string
  teamId: string
}

/** What a global satellite takes of the waiting installations: the team servers' only when allowed there, and nothing of a team at its quota. */
export interface GlobalIntake {
  satelliteId: string
  teamServers: boolean
  quota: number
}

export type InstallationsRepository = ReturnType<typeof installationsRepository>

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

export function installationsRepository(database: Database, executor: Db = database.db) {
  const { t, dialect } = database
  const db = executor
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
  /**
   * `[key, value, held, approved key]` of each value of the row's installation that `whose` keeps
   * (`value` null for a secret; `held` false for a member's value dropped by a move).
   */
  const held = sql`(${values.value} is not null or ${values.sealed} is not null)`
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
    with: (tx: Db) => installationsRepository(database, tx),

    /** Null when the team has an installation of that name already (the unique index decides). */
    async insert(row: InstallationRow): Promise<InstallationRow | null> {
      const [inserted] = await db.insert(i).values(row).onConflictDoNothing({ target: [i.teamId, i.name] }).returning()
      return inserted ?? null
    },

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
     * Takes the installation's row for the rest of the transaction (PostgreSQL; SQLite transactions
     * are serialized). `FOR NO KEY UPDATE`: writers of the installation still go one at a time, but
     * a row that only refers to it (an instance's state, a log line, a call record) can be written
     * meanwhile — its foreign-key check takes a key-share lock, which `FOR UPDATE` would block, and
     * a transaction that then writes that same row would deadlock with it.
     */
    async lock(teamId: string, id: string): Promise<InstallationRow | undefined> {
      const query = db.select().from(i).where(and(eq(i.teamId, teamId), eq(i.id, id)))
      const [row] = dialect === 'postgresql' ? await query.for('no key update') : await query
      return row
    },

    /** Takes the installation's row by id alone (a satellite's report knows no team), as `lock` does. */
    async lockById(id: string): Promise<InstallationRow | undefined> {
      const query = db.select().from(i).where(eq(i.id, id))
      const [row] = dialect === 'postgresql' ? await query.for('no key update') : await query
      return row
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

    /** Names in the team starting with `prefix` (to pick a free default name). */
    async namesLike(teamId: string, prefix: string): Promise<string[]> {
      const rows = await db.select({ name: i.name }).from(i).where(and(eq(i.teamId, teamId), sql`${i.name} like ${`${prefix}%`}`))
      return rows.map((row) => row.name)
    },

    /**
     * Changes the row, and moves `spec_revision` when `respec` (the change alters what runs).
     * Null when the name is taken in the team ('name_taken') or the row is gone.
     */
    async update(id: string, patch: InstallationPatch, options: { respec: boolean; now: Date }): Promise<InstallationRow | 'name_taken' | null> {
      try {
        const [row] = await db
          .update(i)
          .set({ ...patch, updatedAt: options.now, ...(options.respec ? { specRevision: sql`${i.specRevision} + 1` } : {}) })
          .where(eq(i.id, id))
          .returning()
        return row ?? null
      } catch (error) {
        if (isNameTaken(error)) return 'name_taken'
        throw error
      }
    },

    async delete(id: string): Promise<InstallationRow | null> {
      const [row] = await db.delete(i).where(eq(i.id, id)).returning()
      return row ?? null
    },

    /** The values set for these installations: the team's and those of `userId` (never anyone else's), without sealed text. */
    async valuesOf(installationIds: readonly string[], userId: string | null): Promise<SetValue[]> {
      if (installationIds.length === 0) return []
      const whose = userId === null ? isNull(values.userId) : or(isNull(values.userId), eq(values.userId, userId))
      const rows = await db
        .select({
          installationId: values.installationId, userId: values.userId, key: values.key, value: values.value, approvedKey: values.approvedKey,
          held: sql<number>`case when ${held} then 1 else 0 end`.mapWith(Number),
        })
        .from(values)
        .where(and(inArray(values.installationId, [...installationIds]), whose))
      return rows.map((row) => ({ ...row, held: row.held === 1 }))
    },

    /** Every value row of one installation, sealed text included (to re-store them when inputs change). */
    async allValuesOf(installationId: string): Promise<ValueRow[]> {
      return db.select().from(values).where(eq(values.installationId, installationId))
    },

    /** Sets one value (the team's when `userId` is null), replacing the one there. */
    async putValue(row: ValueRow): Promise<void> {
      const update = { value: row.value, sealed: row.sealed, approvedKey: row.approvedKey, updatedAt: row.updatedAt }
      if (row.userId === null) {
        await db.insert(values).values(row).onConflictDoUpdate({ target: [values.installationId, values.key], targetWhere: isNull(values.userId), set: update })
      } else {
        await db.insert(values).values(row).onConflictDoUpdate({ target: [values.installationId, values.userId, values.key], targetWhere: isNotNull(values.userId), set: update })
      }
    },

    /**
     * Drops a member's own value but keeps its row, empty, so that the member's views can say why
     * it is missing; setting it again fills the row, unsetting it deletes it.
     */
    async dropValue(installationId: string, userId: string, key: string, now: Date): Promise<void> {
      await db.update(values).set({ value: null, sealed: null, updatedAt: now })
        .where(and(eq(values.installationId, installationId), eq(values.userId, userId), eq(values.key, key)))
    },

    async deleteValue(installationId: string, userId: string | null, key: string): Promise<void> {
      await db.delete(values).where(and(eq(values.installationId, installationId), userId === null ? isNull(values.userId) : eq(values.userId, userId), eq(values.key, key)))
    },

    /** Every sealed value with its place (secret rotation). */
    async sealedValues(): Promise<Array<Pick<ValueRow, 'installationId' | 'userId' | 'key'> & { sealed: string }>> {
      const rows = await db
        .select({ installationId: values.installationId, userId: values.userId, key: values.key, sealed: values.sealed })
        .from(values)
        .where(isNotNull(values.sealed))
      return rows.map((row) => ({ ...row, sealed: row.sealed! }))
    },

    /**
     * Replaces one sealed value, only if it still holds `previous` (nobody set it meanwhile);
     * false otherwise. `updatedAt` stays: the value did not change, only the key sealing it.
     */
    async reseal(place: { installationId: string; userId: string | null; key: string }, sealed: string, previous: string): Promise<boolean> {
      const rows = await db
        .update(values)
        .set({ sealed })
        .where(and(
          eq(values.installationId, place.installationId),
          place.userId === null ? isNull(values.userId) : eq(values.userId, place.userId),
          eq(values.key, place.key),
          eq(values.sealed, previous),
        ))
        .returning({ key: values.key })
      return rows.length === 1
    },

    /** How many installations use a server (a server in use is not deleted). */
    async countForServer(serverId: string): Promise<number> {
      const [row] = await db.select({ n: count() }).from(i).where(eq(i.serverId, serverId))
      return row?.n ?? 0
    },

    /** Every installation of a server (to follow an edit of the server's own entry). */
    async ofServer(serverId: string): Promise<InstallationRow[]> {
      return db.select().from(i).where(eq(i.serverId, serverId)).orderBy(asc(i.id))
    },

    /** The installations that follow a server's latest version. */
    async trackingLatest(serverId: string): Promise<InstallationRow[]> {
      return db.select().from(i).where(and(eq(i.serverId, serverId), eq(i.trackLatest, true)))
    },

    /**
     * The satellites an installation of `teamId` may be placed on automatically — the team's own
     * and the global ones that are enabled and sent a heartbeat with a working status since
     * `onlineSince` — with how many installations each runs and how many of them are the team's
     * (`leaving` out: the installation being placed again).
     */
    async onlineSatellites(teamId: string, onlineSince: Date, leaving = ''): Promise<SatelliteLoad[]> {
      const s = t.satellites
      return db
        .select({
          id: s.id, name: s.name, teamId: s.teamId, satelliteType: s.satelliteType, isolation: s.isolation,
          installations: count(i.id),
          ofTeam: sql<number>`coalesce(sum(case when ${i.teamId} = ${teamId} then 1 else 0 end), 0)`.mapWith(Number),
        })
        .from(s)
        .leftJoin(i, and(eq(i.satelliteId, s.id), ne(i.id, leaving)))
        .where(and(
          or(eq(s.teamId, teamId), eq(s.satelliteType, 'global')),
          isNull(s.disabledAt),
          isNull(s.offlineAt),
          inArray(s.status, ['active', 'degraded']),
          gte(s.lastHeartbeatAt, onlineSince),
        ))
        .groupBy(s.id, s.name, s.teamId, s.satelliteType, s.isolation)
    },

    /** Every online satellite (as above, of any team), to hand each the installations waiting for it. */
    async allOnline(onlineSince: Date): Promise<Array<{ id: string; teamId: string | null; satelliteType: 'global' | 'team'; isolation: SatelliteLoad['isolation'] }>> {
      const s = t.satellites
      return db
        .select({ id: s.id, teamId: s.teamId, satelliteType: s.satelliteType, isolation: s.isolation })
        .from(s)
        .where(and(isNull(s.disabledAt), inArray(s.status, ['active', 'degraded']), gte(s.lastHeartbeatAt, onlineSince)))
        .orderBy(asc(s.id))
    },

    /** How many installations of the team are placed on the satellite (`leaving` out: the one being moved). */
    async teamCountOn(satelliteId: string, teamId: string, leaving = ''): Promise<number> {
      const [row] = await db.select({ n: count() }).from(i).where(and(eq(i.satelliteId, satelliteId), eq(i.teamId, teamId), ne(i.id, leaving)))
      return row?.n ?? 0
    },

    /**
     * Unplaced installations a satellite may take, oldest first: a team satellite its team's; a
     * global one those of global servers (and of team servers when `teamServers`), of teams below
     * the quota on it. Installations that could not go there are not listed, so that they never
     * crowd out those that could.
     */
    async unplaced(intake: { teamId: string } | GlobalIntake, limit: number): Promise<Unplaced[]> {
      const columns = { id: i.id, teamId: i.teamId }
      if ('teamId' in intake) {
        return db.select(columns).from(i).where(and(isNull(i.satelliteId), eq(i.teamId, intake.teamId))).orderBy(asc(i.createdAt), asc(i.id)).limit(limit)
      }
      if (intake.quota <= 0) return []
      const full = sql`${i.teamId} not in (select team_id from ${i} where satellite_id = ${intake.satelliteId} group by team_id having count(*) >= ${intake.quota})`
      return db
        .select(columns)
        .from(i)
        .innerJoin(t.mcpServers, eq(t.mcpServers.id, i.serverId))
        .where(and(isNull(i.satelliteId), intake.teamServers ? undefined : eq(t.mcpServers.visibility, 'global'), full))
        .orderBy(asc(i.createdAt), asc(i.id))
        .limit(limit)
    },

    /** An unplaced installation with its server's visibility (read again once its team is locked). */
    async unplacedOne(id: string): Promise<{ installation: InstallationRow; visibility: 'global' | 'team' } | undefined> {
      const [row] = await db
        .select({ installation: i, visibility: t.mcpServers.visibility })
        .from(i)
        .innerJoin(t.mcpServers, eq(t.mcpServers.id, i.serverId))
        .where(and(eq(i.id, id), isNull(i.satelliteId)))
      return row
    },

    /**
     * Unplaces the installations of team-defined servers on global satellites (one, or all of
     * them): they may no longer run there. Answers what was released, and from where.
     */
    async releaseTeamServers(from: { satelliteId: string } | 'every global satellite', now: Date): Promise<Array<{ id: string; teamId: string; satelliteId: string }>> {
      const s = t.satellites
      const globals = db.select({ id: s.id }).from(s).where(from === 'every global satellite' ? eq(s.satelliteType, 'global') : and(eq(s.satelliteType, 'global'), eq(s.id, from.satelliteId)))
      const teamServers = db.select({ id: t.mcpServers.id }).from(t.mcpServers).where(eq(t.mcpServers.visibility, 'team'))
      const placed = await db
        .select({ satelliteId: i.satelliteId })
        .from(i)
        .where(and(inArray(i.satelliteId, globals), inArray(i.serverId, teamServers)))
        .groupBy(i.satelliteId)
      const released: Array<{ id: string; teamId: string; satelliteId: string }> = []
      // One satellite at a time, so that each row released is known to come from that satellite.
      for (const { satelliteId } of placed) {
        const rows = await db
          .update(i)
          .set({ satelliteId: null, updatedAt: now, specRevision: sql`${i.specRevision} + 1` })
          .where(and(eq(i.satelliteId, satelliteId!), inArray(i.serverId, teamServers)))
          .returning({ id: i.id, teamId: i.teamId })
        released.push(...rows.map((row) => ({ ...row, satelliteId: satelliteId! })))
      }
      return released
    },

    /** Places an installation that is still unplaced; false when someone placed it meanwhile. */
    async place(id: string, satelliteId: string, now: Date): Promise<boolean> {
      const rows = await db
        .update(i)
        .set({ satelliteId, updatedAt: now, specRevision: sql`${i.specRevision} + 1` })
        .where(and(eq(i.id, id), isNull(i.satelliteId)))
        .returning({ id: i.id })
      return rows.length === 1
    },

    /** Unplaces every installation of a satellite (disabled): they are placed again elsewhere. */
    async unplaceFrom(satelliteId: string, now: Date): Promise<Unplaced[]> {
      return db
        .update(i)
        .set({ satelliteId: null, updatedAt: now, specRevision: sql`${i.specRevision} + 1` })
        .where(eq(i.satelliteId, satelliteId))
        .returning({ id: i.id, teamId: i.teamId })
    },
  }
}

/** The team's name index (PostgreSQL names the index; SQLite the columns). */
function isNameTaken(error: unknown): boolean {
  const index = violatedUniqueIndex(error)
  return index === 'mcp_installations_team_name_unique' || (index?.includes('mcp_installations.name') ?? false)
}
