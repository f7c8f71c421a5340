import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { createCategory, createServer, insertTeamServer, type CategoryBody, type ServerBody } from '../helpers/catalogue.js'
import { manualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'
import { bearer, issueTokens } from '../helpers/oauth.js'
import { client, createTeam, ROOMY_LIMITS, signUp, type Account, type Call, type TeamBody } from '../helpers/teams.js'

const LIST = '/api/mcp/servers'
const SECOND = 1000

/** Setup makes dozens of requests (and hashes passwords): room for a loaded machine. */
const SETUP_TIMEOUT = 90_000

type Query = Record<string, string | number | boolean>
type Sort = 'name' | '-created_at' | '-updated_at'

const withQuery = (path: string, query: Query = {}) => {
  const params = new URLSearchParams(Object.entries(query).map(([key, value]): [string, string] => [key, String(value)]))
  const text = params.toString()
  return text === '' ? path : `${path}?${text}`
}

/** Byte order of UTF-8, as both databases compare the sort key (SQLite BINARY, PostgreSQL collate "C"). */
const binary = (a: string, b: string) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'))
const newestFirst = (a: string, b: string) => Date.parse(b) - Date.parse(a)

/** The documented order of each sort, applied to the fixture in memory. */
const ORDER: Record<Sort, (a: ServerBody, b: ServerBody) => number> = {
  'name': (a, b) => binary(a.name.toLowerCase(), b.name.toLowerCase()) || binary(a.id, b.id),
  '-created_at': (a, b) => newestFirst(a.created_at, b.created_at) || binary(b.id, a.id),
  '-updated_at': (a, b) => newestFirst(a.updated_at, b.updated_at) || binary(b.id, a.id),
}
const SORTS = Object.keys(ORDER) as Sort[]

/**
 * Names that a collation-aware or case-sensitive order would place differently from the
 * binary order of the lowercased name: case twins, spaces, '-', '_' and digits after a common
 * prefix, a leading '~' and '1', a non-ASCII initial.
 */
const NAMES = [
  'PostgreSQL Bridge', 'apache Kafka Relay', 'Zebra Notes', 'zebra notes', '10x Logger', 'Éclair Docs',
  'alpha', 'Alpha', 'Alpha Beta', 'alpha-beta', 'alpha_beta', 'Alpha2',
  'Mongo Atlas', 'Redis Cache', 'Slack Notifier', 'GitHub Issues', 'Gitea Mirror', 'Jira Board',
  'Notion Pages', 'S3 Buckets', 'Weather Now', 'Time Zones', 'Kubernetes Pods', 'Docker Hub',
  'Sentry Errors', 'Stripe Payments', 'linear Tasks', 'Figma Frames', 'Zed Editor', '~Tilde Tools',
]
const LANGUAGES = ['TypeScript', 'Python', 'Go', 'Rust', null, 'typescript', 'PYTHON'] as const
const RUNTIMES = ['node', 'Python', 'docker', null, 'NODE', 'python'] as const
const TRANSPORTS = ['stdio', 'http', 'sse'] as const
const STATUSES = ['active', 'active', 'deprecated', 'maintenance', 'disabled'] as const
const TAG_SETS = [
  ['database', 'sql'], ['DevOps', 'Cloud'], ['Machine  Learning', 'python'], [], ['database'],
  ['chat', 'notifications'], ['sql', 'analytics', 'Database'], ['cloud'],
]

describe.each(DIALECTS)('listing catalogue servers on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  const clock = manualClock(Date.now())
  let admin: Account
  let alice: Account
  let bob: Account
  let carol: Account
  let teamA: TeamBody
  let teamB: TeamBody
  let categories: CategoryBody[]
  /** Every server of the catalogue as the API last answered it, global and team ones. */
  let fixture: ServerBody[]
  let aliceRead: string
  let aliceNoCatalogue: string

  interface Viewer { name: string; headers: () => Record<string, string>; sees: (server: ServerBody) => boolean }
  const asSession = (name: string, account: () => Account, teams: () => string[]): Viewer => ({
    name,
    headers: () => ({ cookie: account().cookie }),
    sees: (server) => server.visibility === 'global' || teams().includes(server.owner_team_id ?? ''),
  })
  const adminViewer: Viewer = { name: 'the global admin', headers: () => ({ cookie: admin.cookie }), sees: () => true }
  const aliceViewer = asSession('a member of team A', () => alice, () => [teamA.id])
  const bobViewer = asSession('a member of team B', () => bob, () => [teamB.id])
  const carolViewer = asSession('a member of no team with servers', () => carol, () => [])
  const aliceBearer: Viewer = { name: 'a team A member with an mcp:read token', headers: () => bearer(aliceRead), sees: aliceViewer.sees }
  const VIEWERS = [adminViewer, aliceViewer, bobViewer, carolViewer, aliceBearer]

  const get = (viewer: Viewer, query: Query = {}) => app.inject({ method: 'GET', url: withQuery(LIST, query), headers: viewer.headers() })

  /** The page, after checking the status and the envelope. */
  async function page(viewer: Viewer, query: Query = {}) {
    const response = await get(viewer, query)
    expect(response.statusCode, response.body).toBe(200)
    const body = response.json()
    expect(body.success).toBe(true)
    return body.data as { servers: ServerBody[]; pagination: { total: number; limit: number; offset: number; has_more: boolean } }
  }

  const expected = (viewer: Viewer, keep: (server: ServerBody) => boolean = () => true, sort: Sort = 'name') =>
    fixture.filter((server) => viewer.sees(server) && keep(server)).sort(ORDER[sort])
  const names = (servers: ServerBody[]) => servers.map((server) => `${server.name} (${server.id})`)

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ clock, limits: ROOMY_LIMITS })).app
    call = client(app)
    admin = await signUp(app, 'listing_admin')
    alice = await signUp(app, 'listing_alice')
    bob = await signUp(app, 'listing_bob')
    carol = await signUp(app, 'listing_carol')
    teamA = await createTeam(call, alice, 'Team A')
    teamB = await createTeam(call, bob, 'Team B')
    aliceRead = (await issueTokens(app, alice.cookie, 'mcp:read')).access_token
    aliceNoCatalogue = (await issueTokens(app, alice.cookie, 'user:read teams:read')).access_token
    categories = [
      await createCategory(call, admin, { name: 'Databases' }),
      await createCategory(call, admin, { name: 'DevOps' }),
      await createCategory(call, admin, { name: 'Productivity' }),
    ]

    // Three servers per instant: ties on created_at, broken by id.
    const globals: ServerBody[] = []
    for (const [i, name] of NAMES.entries()) {
      if (i % 3 === 0) clock.advance(SECOND)
      globals.push(await createServer(call, admin, {
        name,
        description: `Server number ${i}`,
        category_id: i % 4 === 3 ? null : categories[i % 3]!.id,
        tags: TAG_SETS[i % TAG_SETS.length],
        language: LANGUAGES[i % LANGUAGES.length],
        runtime: RUNTIMES[i % RUNTIMES.length],
        transport_type: TRANSPORTS[i % TRANSPORTS.length],
        status: STATUSES[i % STATUSES.length],
        featured: i % 4 === 1,
      }))
    }
    // Changes in an order unrelated to creation, two per instant: -updated_at differs from -created_at.
    for (const [n, i] of [17, 2, 25, 9, 0, 13, 28, 5].entries()) {
      if (n % 2 === 0) clock.advance(SECOND)
      const response = await call('PUT', `/api/mcp/servers/global/${globals[i]!.id}`, admin, { description: `Changed ${n}` })
      expect(response.statusCode, response.body).toBe(200)
      globals[i] = response.json().data.server
    }

    const database = app.services.database
    const teamIds = [
      await insertTeamServer(database, teamA.id, 'Alpha Team Vault', { tags: ['database', 'internal'] }),
      await insertTeamServer(database, teamA.id, 'internal wiki', { tags: ['internal'] }),
      await insertTeamServer(database, teamA.id, 'Zulu Secrets'),
      await insertTeamServer(database, teamB.id, 'Bravo Private', { tags: ['database'] }),
      await insertTeamServer(database, teamB.id, 'alpha private'),
    ]
    const teamServers: ServerBody[] = []
    for (const id of teamIds) {
      const response = await call('GET', `/api/mcp/servers/${id}`, admin)
      expect(response.statusCode, response.body).toBe(200)
      teamServers.push(response.json().data.server)
    }
    fixture = [...globals, ...teamServers]
  }, SETUP_TIMEOUT)
  afterAll(() => ctx.close())

  describe('the whole list', () => {
    it.each(VIEWERS.map((viewer) => [viewer.name, viewer] as const))('shows %s exactly the servers it may see, by name', async (_, viewer) => {
      const { servers, pagination } = await page(viewer, { limit: 100 })
      const want = expected(viewer)
      expect(names(servers)).toEqual(names(want))
      expect(pagination).toEqual({ total: want.length, limit: 100, offset: 0, has_more: false })
    })

    it('the fixture is what the visibility cases need: each viewer sees a different set', () => {
      const counts = [adminViewer, aliceViewer, bobViewer, carolViewer].map((viewer) => expected(viewer).length)
      expect(counts).toEqual([NAMES.length + 5, NAMES.length + 3, NAMES.length + 2, NAMES.length])
    })

    it('answers each server in full, as GET /api/mcp/servers/:id does', async () => {
      const { servers } = await page(adminViewer, { limit: 100 })
      for (const server of servers) expect(server).toEqual(fixture.find((known) => known.id === server.id))
    })

    it('defaults to 20 per page from offset 0', async () => {
      const { servers, pagination } = await page(adminViewer)
      expect(names(servers)).toEqual(names(expected(adminViewer).slice(0, 20)))
      expect(pagination).toEqual({ total: NAMES.length + 5, limit: 20, offset: 0, has_more: true })
    })

    it('a team server is not readable by id outside its team, either', async () => {
      const secret = fixture.find((server) => server.name === 'Zulu Secrets')!
      expect((await call('GET', `/api/mcp/servers/${secret.id}`, carol)).statusCode).toBe(404)
      expect((await call('GET', `/api/mcp/servers/${secret.id}`, bob)).statusCode).toBe(404)
      expect((await call('GET', `/api/mcp/servers/${secret.id}`, alice)).statusCode).toBe(200)
    })
  })

  describe('filters', () => {
    const lower = (value: string | null) => value?.toLowerCase()
    const cases: Array<[string, Query, (server: ServerBody) => boolean]> = [
      ['category_id', { category_id: 'CAT1' }, (s) => s.category_id === categories[1]!.id],
      ['status=active', { status: 'active' }, (s) => s.status === 'active'],
      ['status=deprecated', { status: 'deprecated' }, (s) => s.status === 'deprecated'],
      ['status=maintenance', { status: 'maintenance' }, (s) => s.status === 'maintenance'],
      ['status=disabled', { status: 'disabled' }, (s) => s.status === 'disabled'],
      ['transport_type=stdio', { transport_type: 'stdio' }, (s) => s.transport_type === 'stdio'],
      ['transport_type=http', { transport_type: 'http' }, (s) => s.transport_type === 'http'],
      ['transport_type=sse', { transport_type: 'sse' }, (s) => s.transport_type === 'sse'],
      ['language=python (stored as Python and PYTHON)', { language: 'python' }, (s) => lower(s.language) === 'python'],
      ['language=TYPESCRIPT', { language: 'TYPESCRIPT' }, (s) => lower(s.language) === 'typescript'],
      ['language=Go', { language: 'Go' }, (s) => s.language === 'Go'],
      ['runtime=NODE (stored as node and NODE)', { runtime: 'NODE' }, (s) => lower(s.runtime) === 'node'],
      ['runtime=pYtHoN', { runtime: 'pYtHoN' }, (s) => lower(s.runtime) === 'python'],
      ['featured=true', { featured: true }, (s) => s.featured],
      ['featured=false', { featured: false }, (s) => !s.featured],
      ['tag=database', { tag: 'database' }, (s) => s.tags.includes('database')],
      ['tag=DataBase', { tag: 'DataBase' }, (s) => s.tags.includes('database')],
      ['tag=DEVOPS (stored from "DevOps")', { tag: 'DEVOPS' }, (s) => s.tags.includes('devops')],
      ['tag=Machine Learning (stored from "Machine  Learning")', { tag: 'Machine Learning' }, (s) => s.tags.includes('machine learning')],
      ['tag=internal (team A servers only)', { tag: 'internal' }, (s) => s.tags.includes('internal')],
      ['category_id and status', { category_id: 'CAT0', status: 'active' }, (s) => s.category_id === categories[0]!.id && s.status === 'active'],
      ['transport_type and featured', { transport_type: 'stdio', featured: true }, (s) => s.transport_type === 'stdio' && s.featured],
      ['language and runtime', { language: 'typescript', runtime: 'node' }, (s) => lower(s.language) === 'typescript' && lower(s.runtime) === 'node'],
      ['tag, status and transport_type', { tag: 'SQL', status: 'active', transport_type: 'stdio' }, (s) => s.tags.includes('sql') && s.status === 'active' && s.transport_type === 'stdio'],
      ['tag and featured=false', { tag: 'database', featured: false }, (s) => s.tags.includes('database') && !s.featured],
      ['status=active and featured=false (team servers included)', { status: 'active', featured: false }, (s) => s.status === 'active' && !s.featured],
      ['every filter at once', { category_id: 'CAT1', status: 'active', transport_type: 'http', language: 'python', runtime: 'PYTHON', featured: true, tag: 'DevOps' },
        (s) => s.category_id === categories[1]!.id && s.status === 'active' && s.transport_type === 'http' && lower(s.language) === 'python' && lower(s.runtime) === 'python' && s.featured && s.tags.includes('devops')],
    ]
    const resolve = (query: Query): Query =>
      Object.fromEntries(Object.entries(query).map(([key, value]) => [key, typeof value === 'string' && /^CAT\d$/.test(value) ? categories[Number(value[3])]!.id : value]))

    it.each(cases)('%s: the matching servers each viewer may see, and their total', async (_, query, keep) => {
      for (const viewer of VIEWERS) {
        const want = expected(viewer, keep)
        const { servers, pagination } = await page(viewer, { ...resolve(query), limit: 100 })
        expect(names(servers), viewer.name).toEqual(names(want))
        expect(pagination.total, viewer.name).toBe(want.length)
      }
      // Each case must narrow the list for someone, and find something for the admin.
      expect(expected(adminViewer, keep).length).toBeGreaterThan(0)
      expect(expected(adminViewer, keep).length).toBeLessThan(fixture.length)
    })

    it('the case with every filter at once singles out one server of the fixture', () => {
      const [, , keep] = cases.at(-1)!
      expect(expected(adminViewer, keep)).toHaveLength(1)
    })

    it.each<[string, Query]>([
      ['a language no server has', { language: 'cobol' }],
      ['a tag no server has', { tag: 'nonexistent' }],
      ['an unknown category', { category_id: 'no-such-category' }],
      ['filters that each match but never together', { language: 'Rust', runtime: 'docker' }],
    ])('%s: an empty list, total 0', async (_, query) => {
      expect(fixture.some((s) => s.language === 'Rust') && fixture.some((s) => s.runtime === 'docker')).toBe(true)
      for (const viewer of [adminViewer, aliceViewer]) {
        const { servers, pagination } = await page(viewer, query)
        expect(servers).toEqual([])
        expect(pagination).toEqual({ total: 0, limit: 20, offset: 0, has_more: false })
      }
    })

    it('the tag filter shows a team tag only to those who see the team servers', async () => {
      expect((await page(carolViewer, { tag: 'internal' })).pagination.total).toBe(0)
      expect((await page(bobViewer, { tag: 'internal' })).pagination.total).toBe(0)
      expect((await page(aliceViewer, { tag: 'internal' })).servers.map((s) => s.name)).toEqual(['Alpha Team Vault', 'internal wiki'])
      expect((await page(adminViewer, { tag: 'internal' })).servers.map((s) => s.name)).toEqual(['Alpha Team Vault', 'internal wiki'])
    })
  })

  describe('sorts', () => {
    it('the fixture has ties on the sort keys, so the id tie-breaker matters', () => {
      const ties = (key: (server: ServerBody) => string) => fixture.length - new Set(fixture.map(key)).size
      expect(ties((s) => s.name.toLowerCase())).toBeGreaterThanOrEqual(2)
      expect(ties((s) => s.created_at)).toBeGreaterThanOrEqual(10)
      expect(ties((s) => s.updated_at)).toBeGreaterThanOrEqual(10)
      // The three orders are distinct.
      const orders = SORTS.map((sort) => expected(adminViewer, () => true, sort).map((s) => s.id).join())
      expect(new Set(orders).size).toBe(3)
    })

    it('name: by the lowercased name in byte order, then id (not by a locale collation)', async () => {
      const { servers } = await page(adminViewer, { sort: 'name', limit: 100 })
      const order = servers.map((s) => s.name)
      // Byte order: ' ' < '-' < digits < '_' < letters < '~' < 'É'.
      expect(order.slice(0, 2)).toEqual(['10x Logger', expect.stringMatching(/^alpha$/i)])
      const punctuated = ['alpha_beta', 'Alpha2', 'alpha-beta', 'Alpha Beta']
      expect(order.filter((name) => punctuated.includes(name))).toEqual(['Alpha Beta', 'alpha-beta', 'Alpha2', 'alpha_beta'])
      expect(order.slice(-2)).toEqual(['~Tilde Tools', 'Éclair Docs'])
      // Case twins come by id.
      const alphas = servers.filter((s) => s.name.toLowerCase() === 'alpha')
      expect(alphas.map((s) => s.id)).toEqual(alphas.map((s) => s.id).sort(binary))
    })

    it.each(SORTS.flatMap((sort) => VIEWERS.map((viewer) => [sort, viewer.name, viewer] as const)))(
      'sort=%s for %s: the visible servers in the documented order',
      async (sort, _, viewer) => {
        const { servers, pagination } = await page(viewer, { sort, limit: 100 })
        expect(names(servers)).toEqual(names(expected(viewer, () => true, sort)))
        expect(pagination.total).toBe(expected(viewer).length)
      },
    )

    it('sort=name is the default', async () => {
      const implicit = await page(aliceViewer, { limit: 100 })
      const explicit = await page(aliceViewer, { limit: 100, sort: 'name' })
      expect(names(implicit.servers)).toEqual(names(explicit.servers))
    })
  })

  describe('pagination', () => {
    /** Every page of 7 in turn; checks each page's pagination block on the way. */
    async function walk(viewer: Viewer, query: Query): Promise<ServerBody[]> {
      const seen: ServerBody[] = []
      let total = -1
      for (let offset = 0; ; offset += 7) {
        const { servers, pagination } = await page(viewer, { ...query, limit: 7, offset })
        if (total === -1) total = pagination.total
        expect(pagination).toEqual({ total, limit: 7, offset, has_more: offset + 7 < total })
        expect(servers.length).toBe(Math.max(0, Math.min(7, total - offset)))
        seen.push(...servers)
        if (!pagination.has_more) break
        expect(offset).toBeLessThan(1000)
      }
      expect(seen.length).toBe(total)
      return seen
    }

    const walks: Array<[string, Query, (server: ServerBody) => boolean]> = [
      ['no filter', {}, () => true],
      ['status=active', { status: 'active' }, (s) => s.status === 'active'],
      ['tag=database', { tag: 'database' }, (s) => s.tags.includes('database')],
    ]
    it.each(SORTS.flatMap((sort) => walks.map(([label, query, keep]) => [sort, label, query, keep] as const)))(
      'walking every page of 7 with sort=%s and %s visits each visible server once, in order',
      async (sort, _, query, keep) => {
        for (const viewer of [adminViewer, aliceViewer, carolViewer, aliceBearer]) {
          const seen = await walk(viewer, { ...query, sort })
          const ids = seen.map((s) => s.id)
          expect(new Set(ids).size, `${viewer.name}: duplicates`).toBe(ids.length)
          expect(names(seen), viewer.name).toEqual(names(expected(viewer, keep, sort)))
        }
        expect(expected(adminViewer, keep).length).toBeGreaterThan(7)
      },
    )

    it('an offset at the total answers an empty page, has_more false', async () => {
      const total = expected(adminViewer).length
      const { servers, pagination } = await page(adminViewer, { offset: total })
      expect(servers).toEqual([])
      expect(pagination).toEqual({ total, limit: 20, offset: total, has_more: false })
    })

    it('an offset beyond the total answers an empty page with the real total', async () => {
      for (const offset of [expected(carolViewer).length + 1, 500, 1_000_000]) {
        const { servers, pagination } = await page(carolViewer, { offset, limit: 5 })
        expect(servers).toEqual([])
        expect(pagination).toEqual({ total: expected(carolViewer).length, limit: 5, offset, has_more: false })
      }
    })

    it('the last server alone: offset total-1, has_more false', async () => {
      const want = expected(aliceViewer)
      const { servers, pagination } = await page(aliceViewer, { offset: want.length - 1, limit: 10 })
      expect(names(servers)).toEqual(names(want.slice(-1)))
      expect(pagination.has_more).toBe(false)
    })

    it('has_more is true exactly while offset + limit < total', async () => {
      const total = expected(adminViewer).length
      for (const [limit, offset, more] of [[1, 0, true], [1, total - 2, true], [1, total - 1, false], [total - 1, 0, true], [total, 0, false], [100, 0, false], [10, total - 10, false], [10, total - 11, true]] as const) {
        const { servers, pagination } = await page(adminViewer, { limit, offset })
        expect(pagination, `limit ${limit} offset ${offset}`).toEqual({ total, limit, offset, has_more: more })
        expect(names(servers)).toEqual(names(expected(adminViewer).slice(offset, offset + limit)))
      }
    })

    it('the bounds themselves are accepted: limit 1 and 100, offset 0 and 1 000 000', async () => {
      for (const query of [{ limit: 1 }, { limit: 100 }, { offset: 0 }, { offset: 1_000_000 }] as Query[]) {
        const response = await get(adminViewer, query)
        expect(response.statusCode, JSON.stringify(query)).toBe(200)
      }
    })
  })

  describe('refused queries', () => {
    const invalid: Array<[string, string, string]> = [
      ['limit=0', 'limit=0', 'limit'],
      ['limit=101', 'limit=101', 'limit'],
      ['limit=-1', 'limit=-1', 'limit'],
      ['limit=1.5', 'limit=1.5', 'limit'],
      ['limit=ten', 'limit=ten', 'limit'],
      ['an empty limit', 'limit=', 'limit'],
      ['offset=-1', 'offset=-1', 'offset'],
      ['offset=1000001', 'offset=1000001', 'offset'],
      ['offset=2.5', 'offset=2.5', 'offset'],
      ['offset=x', 'offset=x', 'offset'],
      ['an unknown sort', 'sort=popularity', 'sort'],
      ['sort=created_at (ascending is not offered)', 'sort=created_at', 'sort'],
      ['sort=-name', 'sort=-name', 'sort'],
      ['sort=NAME', 'sort=NAME', 'sort'],
      ['an unknown status', 'status=archived', 'status'],
      ['an unknown transport', 'transport_type=websocket', 'transport_type'],
      ['featured=maybe', 'featured=maybe', 'featured'],
      ['an empty tag', 'tag=', 'tag'],
      ['a tag of 51 characters', `tag=${'t'.repeat(51)}`, 'tag'],
      ['an empty language', 'language=', 'language'],
      ['an empty category_id', 'category_id=', 'category_id'],
      ['an unknown parameter', 'page=2', 'page'],
      ['a search term on the list', 'q=postgres', 'q'],
    ]
    it.each(invalid)('%s: 400 VALIDATION_ERROR naming the parameter', async (_, query, field) => {
      const response = await app.inject({ method: 'GET', url: `${LIST}?${query}`, headers: { cookie: admin.cookie } })
      expect(response.statusCode, response.body).toBe(400)
      const body = response.json()
      expect(body).toMatchObject({ success: false, code: 'VALIDATION_ERROR' })
      expect(body.details).toEqual(expect.arrayContaining([expect.objectContaining({ field, in: 'querystring' })]))
    })
  })

  describe('non-ASCII values', () => {
    // After the fixture-based cases: the servers it adds join the fixture.
    it('language and runtime with non-ASCII letters match themselves and their other cases', async () => {
      const server = await createServer(call, admin, { name: 'Accented Fields', language: 'Élixir', runtime: 'Ñode' })
      fixture.push(server)
      for (const query of [{ language: 'Élixir' }, { language: 'élixir' }, { language: 'ÉLIXIR' }, { runtime: 'Ñode' }, { runtime: 'ñODE' }, { language: 'élixir', runtime: 'ÑODE' }] as Query[]) {
        const { servers, pagination } = await page(carolViewer, query)
        expect(servers.map((s) => s.name), JSON.stringify(query)).toEqual(['Accented Fields'])
        expect(pagination.total).toBe(1)
      }
    })

    it('a tag with non-ASCII letters matches in any case', async () => {
      const server = await createServer(call, admin, { name: 'Accented Tag', tags: ['Čaj Ñandú'] })
      fixture.push(server)
      for (const tag of ['čaj ñandú', 'ČAJ ÑANDÚ', 'Čaj Ñandú']) {
        expect((await page(carolViewer, { tag })).servers.map((s) => s.name), tag).toEqual(['Accented Tag'])
      }
    })
  })

  describe('authentication', () => {
    it('without credentials: 401', async () => {
      const response = await app.inject({ method: 'GET', url: LIST })
      expect(response.statusCode).toBe(401)
      expect(response.json()).toMatchObject({ success: false, code: 'UNAUTHORIZED' })
    })

    it('with a bearer token lacking mcp:read: 403 naming the required scope', async () => {
      const response = await app.inject({ method: 'GET', url: LIST, headers: bearer(aliceNoCatalogue) })
      expect(response.statusCode).toBe(403)
      expect(response.json()).toMatchObject({ success: false, code: 'FORBIDDEN', details: { required_scope: 'mcp:read' } })
    })

    it('with an unknown bearer token: 401', async () => {
      const response = await app.inject({ method: 'GET', url: LIST, headers: bearer('not-a-real-token') })
      expect(response.statusCode).toBe(401)
    })

    it('a bearer token with mcp:read sees what its user sees, with filters', async () => {
      const viaToken = await page(aliceBearer, { tag: 'database', limit: 100 })
      const viaSession = await page(aliceViewer, { tag: 'database', limit: 100 })
      expect(names(viaToken.servers)).toEqual(names(viaSession.servers))
      expect(viaToken.servers.some((s) => s.name === 'Alpha Team Vault')).toBe(true)
      expect(viaToken.servers.some((s) => s.name === 'Bravo Private')).toBe(false)
    })
  })
})
