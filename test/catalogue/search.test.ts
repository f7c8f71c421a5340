import type { FastifyInstance } from 'fastify'
import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { createServer, insertTeamServer, type ServerBody } from '../helpers/catalogue.js'
import { DIALECTS } from '../helpers/database.js'
import { captureLogs } from '../helpers/log-capture.js'
import { bearer, issueTokens } from '../helpers/oauth.js'
import { rawRows } from '../helpers/sql.js'
import { client, createTeam, ROOMY_LIMITS, signUp, type Account, type Call, type TeamBody } from '../helpers/teams.js'

const SEARCH = '/api/mcp/servers/search'

/** Setup makes dozens of requests (and hashes passwords): room for a loaded machine. */
const SETUP_TIMEOUT = 90_000

type Query = Record<string, string | number | boolean>
interface Page { servers: ServerBody[]; pagination: { total: number; limit: number; offset: number; has_more: boolean } }

const searchUrl = (q: string | undefined, query: Query = {}) => {
  const params = new URLSearchParams(Object.entries(query).map(([key, value]): [string, string] => [key, String(value)]))
  if (q !== undefined) params.set('q', q)
  return `${SEARCH}?${params.toString()}`
}

/** Plain words as the contract defines them: runs of letters and digits, lowercased. */
const wordsOf = (text: string) => text.normalize('NFKC').toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []
const startsAWord = (words: string[], term: string) => words.some((word) => word.startsWith(term))
/** Every query word starts a word of the name, the tags or the description. */
const matches = (server: ServerBody, q: string) => {
  const words = wordsOf([server.name, ...server.tags, server.description].join(' '))
  const terms = wordsOf(q)
  return terms.length > 0 && terms.every((term) => startsAWord(words, term))
}
const inName = (server: ServerBody, q: string) => wordsOf(q).some((term) => startsAWord(wordsOf(server.name), term))
const bySlug = (servers: ServerBody[]) => servers.map((server) => server.slug)
const binary = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b))

/**
 * The search fixture. Each server's words are chosen for one kind of case: a query word in the
 * name only (PostgreSQL), in tags and description only, many times (Database Toolkit), in a tag
 * only (Cluster Control), identical twins (Echo Server), a near-miss name for typo matching
 * (Credis Tool), non-Latin text.
 */
const SERVERS = [
  { name: 'PostgreSQL MCP Server', description: 'Read-only SQL access to a relational database: tables, column names and schema inspection.', tags: ['database', 'sql'], transport_type: 'stdio', featured: true },
  { name: 'Database Toolkit', description: 'Connects to postgres, postgres replicas and postgres backups.', tags: ['postgres', 'database', 'sql'], transport_type: 'http' },
  { name: 'Cluster Control', description: 'Manage pods and deployments across clusters.', tags: ['kubernetes', 'ops'], transport_type: 'http' },
  { name: 'Kubernetes MCP Server', description: 'Deploys workloads to a cluster.', tags: ['k8s'], transport_type: 'http', status: 'deprecated', language: 'Go', runtime: 'Docker' },
  { name: 'Weather Station', description: 'Forecasts from the national weather api, by city.', tags: ['weather'], transport_type: 'http' },
  { name: 'Slack Notifier', description: 'Posts messages to Slack channels from any server.', tags: ['chat'], transport_type: 'sse' },
  { name: 'Observability Hub', description: 'One place for logs.', tags: ['logs'], transport_type: 'stdio' },
  { name: 'Metrics Relay', description: 'Forwards metrics to dashboards.', tags: ['observability'], transport_type: 'stdio' },
  { name: 'Trace Collector', description: 'Collects traces for observability dashboards.', tags: [], transport_type: 'stdio' },
  { name: 'Echo Server', description: 'Returns every request unchanged.', tags: ['echo'], transport_type: 'http' },
  { name: 'Echo Server', description: 'Returns every request unchanged.', tags: ['echo'], transport_type: 'http' },
  { name: 'Redis Cache', description: 'Key value cache.', tags: ['cache'], transport_type: 'stdio' },
  { name: 'Session Store', description: 'Keeps sessions in redis.', tags: ['cache'], transport_type: 'stdio' },
  { name: 'Credis Tool', description: 'Command line helper.', tags: [], transport_type: 'stdio' },
  { name: 'Поиск Документов', description: 'Полнотекстовый поиск по базе знаний, 数据库服务器.', tags: ['документы'], transport_type: 'sse' },
  { name: 'Zircon Gateway', description: 'Routes requests for a fleet of remote workers, with retries, quotas, audit trails, health checks, rolling restarts, blue green releases, request signing, rate limits, load shedding, circuit breakers, tracing hooks and detailed usage reports for every tenant.', tags: [], transport_type: 'stdio' },
  { name: 'Mineral Index', description: 'Zircon, zircons, zirconium.', tags: ['zircon', 'zircon-tools', 'zirconium', 'zircon crystals', 'zircons'], transport_type: 'stdio' },
  { name: 'File System Browser', description: 'Reads files from a local server directory.', tags: ['files', 'SQL'], transport_type: 'http', featured: true },
] as const

describe.each(DIALECTS)('searching the catalogue on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let admin: Account
  let alice: Account
  let bob: Account
  let carol: Account
  let teamA: TeamBody
  let teamB: TeamBody
  let aliceRead: string
  let aliceNoCatalogue: string
  let globals: ServerBody[]
  /** Every server, global and team ones, as the API answers it. */
  let fixture: ServerBody[]
  let seq = 0

  interface Viewer { name: string; headers: () => Record<string, string>; sees: (server: ServerBody) => boolean }
  const adminViewer: Viewer = { name: 'the global admin', headers: () => ({ cookie: admin.cookie }), sees: () => true }
  const memberSees = (server: ServerBody) => server.visibility === 'global' || server.owner_team_id === teamA.id
  const aliceViewer: Viewer = { name: 'a member of team A', headers: () => ({ cookie: alice.cookie }), sees: memberSees }
  const aliceBearer: Viewer = { name: 'a team A member with an mcp:read token', headers: () => bearer(aliceRead), sees: memberSees }
  const bobViewer: Viewer = { name: 'a member of team B', headers: () => ({ cookie: bob.cookie }), sees: (s) => s.visibility === 'global' || s.owner_team_id === teamB.id }
  const carolViewer: Viewer = { name: 'a member of no team with servers', headers: () => ({ cookie: carol.cookie }), sees: (s) => s.visibility === 'global' }
  const VIEWERS = [adminViewer, aliceViewer, aliceBearer, bobViewer, carolViewer]

  const searchAs = (viewer: Viewer, q: string | undefined, query: Query = {}) =>
    app.inject({ method: 'GET', url: searchUrl(q, query), headers: viewer.headers() })

  async function search(viewer: Viewer, q: string, query: Query = {}): Promise<Page> {
    const response = await searchAs(viewer, q, query)
    expect(response.statusCode, `${q}: ${response.body}`).toBe(200)
    const body = response.json()
    expect(body).toMatchObject({ success: true, data: { servers: expect.any(Array), pagination: expect.any(Object) } })
    return body.data
  }
  const names = async (viewer: Viewer, q: string, query: Query = {}) => (await search(viewer, q, query)).servers.map((server) => server.name)
  const named = (name: string) => fixture.find((server) => server.name === name)!

  /** What the contract says a query finds (as a set; the order is checked on its own). */
  const expectedFor = (viewer: Viewer, q: string, keep: (server: ServerBody) => boolean = () => true) =>
    fixture.filter((server) => viewer.sees(server) && matches(server, q) && keep(server))

  /** Every server with a query word in its name comes before every server without one. */
  function expectNameMatchesFirst(servers: ServerBody[], q: string) {
    const flags = servers.map((server) => inName(server, q))
    const firstWithout = flags.indexOf(false)
    if (firstWithout !== -1) expect(flags.slice(firstWithout), `${q}: ${servers.map((s) => s.name).join(', ')}`).not.toContain(true)
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: ROOMY_LIMITS })).app
    call = client(app)
    admin = await signUp(app, 'search_admin')
    alice = await signUp(app, 'search_alice')
    bob = await signUp(app, 'search_bob')
    carol = await signUp(app, 'search_carol')
    teamA = await createTeam(call, alice, 'Search Team A')
    teamB = await createTeam(call, bob, 'Search Team B')
    aliceRead = (await issueTokens(app, alice.cookie, 'mcp:read')).access_token
    aliceNoCatalogue = (await issueTokens(app, alice.cookie, 'user:read')).access_token
    globals = []
    for (const server of SERVERS) globals.push(await createServer(call, admin, { ...server, tags: [...server.tags] }))
    const database = app.services.database
    const teamServers = [
      await insertTeamServer(database, teamA.id, 'Postgres Vault', { description: 'Team secrets kept in a database.', tags: ['internal', 'kubernetes'] }),
      await insertTeamServer(database, teamB.id, 'Bravo Ledger', { description: 'Bookkeeping for team bravo, stored in postgres.', tags: ['internal'] }),
    ]
    fixture = [...globals]
    for (const id of teamServers) fixture.push((await call('GET', `/api/mcp/servers/${id}`, admin)).json().data.server)
  }, SETUP_TIMEOUT)
  afterAll(() => ctx.close())

  describe('matching', () => {
    it('a word prefix finds the name: postg finds "PostgreSQL MCP Server"', async () => {
      expect(await names(carolViewer, 'postg')).toEqual(['PostgreSQL MCP Server', 'Database Toolkit'])
      expect(await names(carolViewer, 'POSTGRESQL')).toEqual(['PostgreSQL MCP Server'])
    })

    it('a prefix of a tag finds the server: kube finds the one tagged kubernetes, after the one named so', async () => {
      expect(await names(carolViewer, 'kube')).toEqual(['Kubernetes MCP Server', 'Cluster Control'])
    })

    it('a word of the description finds the server', async () => {
      expect(await names(carolViewer, 'forecasts')).toEqual(['Weather Station'])
      expect((await names(carolViewer, 'deploy')).sort()).toEqual(['Cluster Control', 'Kubernetes MCP Server'])
    })

    it('only the start of a word matches, not its middle', async () => {
      // Words of descriptions and tags: on PostgreSQL, names also match by trigram similarity (see the typo cases).
      expect(await names(carolViewer, 'plicas')).toEqual([])
      expect(await names(carolViewer, 'ployments')).toEqual([])
      expect(await names(carolViewer, 'replicas')).toEqual(['Database Toolkit'])
    })

    it('every word must match (AND), in any field', async () => {
      expect(await names(carolViewer, 'postgres replicas')).toEqual(['Database Toolkit'])
      expect(await names(carolViewer, 'sql inspection')).toEqual(['PostgreSQL MCP Server'])
      expect(await names(carolViewer, 'postgres nonexistentword')).toEqual([])
    })

    it('non-Latin words match, case-insensitively: Cyrillic, and a CJK run by its start', async () => {
      for (const q of ['поиск', 'ПОИСК', 'базе', 'документы', '数据', '数据库服务器']) {
        expect(await names(carolViewer, q), q).toEqual(['Поиск Документов'])
      }
    })

    const QUERIES = ['postgres', 'database', 'server', 'sql', 'cache', 'echo', 'observ', 'api', 'kube', 'files', 'and', 'team', 'internal']
    it.each(QUERIES)('q=%s finds exactly the servers it should, for each viewer, with the right total', async (q) => {
      for (const viewer of VIEWERS) {
        const { servers, pagination } = await search(viewer, q, { limit: 100 })
        expect(bySlug(servers).sort(), `${viewer.name}`).toEqual(bySlug(expectedFor(viewer, q)).sort())
        expect(pagination).toEqual({ total: servers.length, limit: 100, offset: 0, has_more: false })
        expectNameMatchesFirst(servers, q)
      }
    })
  })

  describe('ranking', () => {
    it('a query word in the name ranks above any number of matches in tags and description', async () => {
      const order = await names(carolViewer, 'postgres')
      expect(order).toEqual(['PostgreSQL MCP Server', 'Database Toolkit'])
      expect(await names(carolViewer, 'database')).toEqual(['Database Toolkit', 'PostgreSQL MCP Server'])
    })

    it('the name comes first even where relevance alone would rank another server higher', async () => {
      // Mineral Index holds "zircon" five times in its tags and three times in its description.
      expect(await names(carolViewer, 'zircon')).toEqual(['Zircon Gateway', 'Mineral Index'])
    })

    it('with several words, a server with any of them in its name comes first', async () => {
      // The second has both words in tags and description, so it would win on relevance alone.
      const servers = (await search(carolViewer, 'database sql', { limit: 100 })).servers
      expect(servers.map((s) => s.name)).toEqual(['Database Toolkit', 'PostgreSQL MCP Server'])
      expectNameMatchesFirst(servers, 'database sql')
    })

    it('after the name, a tag weighs more than the description', async () => {
      expect(await names(carolViewer, 'observability')).toEqual(['Observability Hub', 'Metrics Relay', 'Trace Collector'])
    })

    it('equal relevance is ordered by id', async () => {
      const twins = fixture.filter((server) => server.name === 'Echo Server')
      expect(twins).toHaveLength(2)
      const found = (await search(carolViewer, 'echo')).servers
      expect(found.map((s) => s.id)).toEqual(twins.map((s) => s.id).sort(binary))
    })
  })

  describe('query text is plain words', () => {
    // [q, what it finds]: 'postgres' = the PostgreSQL server among the results, 'none' = nothing, 'ok' = a valid answer.
    // Words are ANDed: `name:postgres` finds the PostgreSQL server because its description holds "names".
    const syntax: Array<[string, 'postgres' | 'none' | 'ok']> = [
      ['"', 'none'], ['"unbalanced', 'none'], ['"postgres', 'postgres'], ['postgres"', 'postgres'], ['"postgres sql"', 'postgres'],
      ['*', 'none'], ['postg*', 'postgres'], ['*postg', 'postgres'], [':', 'none'], ['name:postgres', 'postgres'], ['postgres:*', 'postgres'],
      ['(', 'none'], [')', 'none'], ['(postgres)', 'postgres'], ['NEAR(a b)', 'ok'], ['a NEAR b', 'ok'], ['NEAR(postgres sql)', 'none'],
      ['-', 'none'], ['-postgres', 'postgres'], ['postgres -sql', 'postgres'], ['^', 'none'], ['^postgres', 'postgres'],
      ['AND', 'ok'], ['OR', 'ok'], ['NOT', 'ok'], ['a OR b', 'ok'], ['postgres OR nothing', 'none'], ['postgres AND sql', 'ok'], ['NOT postgres', 'ok'],
      ["'", 'none'], ["'postgres'", 'postgres'], ['\\', 'none'], ['postgres\\', 'postgres'], ['%', 'none'], ['postgres%', 'postgres'], ['_', 'none'], ['post_gres', 'ok'],
      ['&', 'none'], ['postgres & sql', 'postgres'], ['|', 'none'], ['postgres | sql', 'postgres'], ['!', 'none'], ['!postgres', 'postgres'],
      ['<->', 'none'], ['postgres <-> sql', 'postgres'], [':*', 'none'], ['postgres:*A', 'postgres'], ['{postgres}', 'postgres'], ['[postgres]', 'postgres'],
      ['+postgres', 'postgres'], ['postgres.', 'postgres'], ['postgres;--', 'postgres'], ["postgres'; drop table mcp_servers; --", 'none'],
      ['🐘', 'none'], ['🐘 postgres 🐘', 'postgres'], ['база данных', 'ok'], ['数据库', 'ok'], ['ｐｏｓｔｇｒｅｓ', 'postgres'],
      ['.,;:!?"\'`~@#$%^&*()[]{}<>/\\|+=-_'.repeat(7).slice(0, 200), 'none'],
    ]
    it.each(syntax)('q=%j answers 200', async (q, finds) => {
      for (const viewer of [carolViewer, aliceViewer]) {
        const { servers, pagination } = await search(viewer, q, { limit: 100 })
        expect(pagination.total).toBe(servers.length)
        // Every server holding the words is found (exact sets, also on PostgreSQL's typo path, are checked below).
        expect(bySlug(servers)).toEqual(expect.arrayContaining(bySlug(expectedFor(viewer, q))))
        if (finds === 'postgres') expect(servers.map((s) => s.name)).toContain('PostgreSQL MCP Server')
        if (finds === 'none') expect(pagination).toMatchObject({ total: 0, has_more: false })
      }
    })

    // On SQLite this is the whole search; on PostgreSQL the trigram match on names must keep it too.
    const andCases: Array<[string, Viewer[]]> = [
      ['server sql', [carolViewer]],
      ['name:postgres', [carolViewer, aliceViewer]],
      ['NOT postgres', [carolViewer]],
      ['NEAR(postgres sql)', [carolViewer]],
      ['postgres sql', [aliceViewer]],
      [`postgres ${'x'.repeat(191)}`, [carolViewer]],
      ['echo zebra', [carolViewer]],
    ]
    it.each(andCases.map(([q, viewers]) => [q.length > 40 ? `${q.slice(0, 20)}… (${q.length} characters)` : q, q, viewers] as const))(
      'q=%j: every word must match, so a name matching only some of the words is not found',
      async (_, q, viewers) => {
        for (const viewer of viewers) {
          const { servers, pagination } = await search(viewer, q, { limit: 100 })
          expect(servers.map((s) => s.name).sort(), viewer.name).toEqual(expectedFor(viewer, q).map((s) => s.name).sort())
          expect(pagination.total).toBe(expectedFor(viewer, q).length)
        }
      },
    )

    it('a query of punctuation only answers an empty page with total 0', async () => {
      const { servers, pagination } = await search(adminViewer, '!!! ??? ... ***', { limit: 5, offset: 0 })
      expect(servers).toEqual([])
      expect(pagination).toEqual({ total: 0, limit: 5, offset: 0, has_more: false })
    })

    it('the tables are still there after the hostile queries', async () => {
      expect(await names(carolViewer, 'postgresql')).toEqual(['PostgreSQL MCP Server'])
    })
  })

  describe('filters and pagination', () => {
    const combos: Array<[string, Query, (server: ServerBody) => boolean]> = [
      ['server', { transport_type: 'http' }, (s) => s.transport_type === 'http'],
      ['server', { featured: true }, (s) => s.featured],
      ['database', { tag: 'SQL' }, (s) => s.tags.includes('sql')],
      ['kube', { status: 'deprecated' }, (s) => s.status === 'deprecated'],
      ['kube', { status: 'active' }, (s) => s.status === 'active'],
      ['server', { transport_type: 'sse', tag: 'chat' }, (s) => s.transport_type === 'sse' && s.tags.includes('chat')],
      ['server', { language: 'GO', runtime: 'docker' }, (s) => s.language === 'Go' && s.runtime === 'Docker'],
      ['cache', { transport_type: 'http' }, () => false],
    ]
    it.each(combos)('q=%s with %j: the matching servers that pass the filters, and their total', async (q, query, keep) => {
      for (const viewer of [adminViewer, aliceViewer, carolViewer]) {
        const want = expectedFor(viewer, q, keep)
        const { servers, pagination } = await search(viewer, q, { ...query, limit: 100 })
        expect(bySlug(servers).sort(), viewer.name).toEqual(bySlug(want).sort())
        expect(pagination.total).toBe(want.length)
        expectNameMatchesFirst(servers, q)
      }
    })

    it('the filters narrow the search (the fixture makes each case meaningful)', () => {
      for (const [q, , keep] of combos.slice(0, -1)) {
        const all = expectedFor(adminViewer, q)
        const kept = expectedFor(adminViewer, q, keep)
        expect(kept.length, q).toBeGreaterThan(0)
        expect(kept.length, q).toBeLessThan(all.length)
      }
    })

    it('pages of 2 walk the ranked results once each, with total and has_more', async () => {
      const all = (await search(adminViewer, 'server', { limit: 100 })).servers
      expect(all.length).toBeGreaterThan(4)
      const seen: ServerBody[] = []
      for (let offset = 0; offset < all.length + 2; offset += 2) {
        const { servers, pagination } = await search(adminViewer, 'server', { limit: 2, offset })
        expect(pagination).toEqual({ total: all.length, limit: 2, offset, has_more: offset + 2 < all.length })
        seen.push(...servers)
      }
      expect(bySlug(seen)).toEqual(bySlug(all))
    })

    it('an offset beyond the results answers an empty page with the real total', async () => {
      const total = expectedFor(adminViewer, 'server').length
      const { servers, pagination } = await search(adminViewer, 'server', { offset: 1_000_000 })
      expect(servers).toEqual([])
      expect(pagination).toEqual({ total, limit: 20, offset: 1_000_000, has_more: false })
    })
  })

  describe('visibility', () => {
    it.each(VIEWERS.map((viewer) => [viewer.name, viewer] as const))('a team server matching the query is found only by its team and the admin: %s', async (_, viewer) => {
      const { servers, pagination } = await search(viewer, 'postgres', { limit: 100 })
      const sees = viewer.sees(named('Postgres Vault'))
      expect(servers.map((s) => s.name).includes('Postgres Vault')).toBe(sees)
      expect(servers.map((s) => s.name).includes('Bravo Ledger')).toBe(viewer === adminViewer || viewer === bobViewer)
      expect(pagination.total).toBe(expectedFor(viewer, 'postgres').length)
    })

    it('the team server takes its place in the ranking for those who see it', async () => {
      const order = await names(aliceViewer, 'postgres')
      expect(order.slice(0, 2).sort()).toEqual(['PostgreSQL MCP Server', 'Postgres Vault'])
      expect(order.slice(2)).toEqual(['Database Toolkit'])
      expect(await names(carolViewer, 'internal')).toEqual([])
      expect((await names(aliceViewer, 'internal'))).toEqual(['Postgres Vault'])
    })

    it('the tag filter inside a search honours visibility too', async () => {
      expect((await search(carolViewer, 'team', { tag: 'internal' })).pagination.total).toBe(0)
      expect(await names(aliceViewer, 'team', { tag: 'internal' })).toEqual(['Postgres Vault'])
      expect((await search(adminViewer, 'team', { tag: 'internal' })).pagination.total).toBe(2)
    })
  })

  describe('validation and authentication', () => {
    const invalid: Array<[string, string, string]> = [
      ['no q', '', 'q'],
      ['an empty q', 'q=', 'q'],
      ['a q of 201 characters', `q=${'a'.repeat(201)}`, 'q'],
      ['a sort', 'q=postgres&sort=name', 'sort'],
      ['an unknown parameter', 'q=postgres&fuzzy=true', 'fuzzy'],
      ['limit=0', 'q=postgres&limit=0', 'limit'],
      ['limit=101', 'q=postgres&limit=101', 'limit'],
      ['offset=-1', 'q=postgres&offset=-1', 'offset'],
      ['offset=1000001', 'q=postgres&offset=1000001', 'offset'],
      ['an unknown status', 'q=postgres&status=gone', 'status'],
      ['an unknown transport', 'q=postgres&transport_type=ws', 'transport_type'],
    ]
    it.each(invalid)('%s: 400 VALIDATION_ERROR naming the parameter', async (_, query, field) => {
      const response = await app.inject({ method: 'GET', url: `${SEARCH}?${query}`, headers: { cookie: carol.cookie } })
      expect(response.statusCode, response.body).toBe(400)
      expect(response.json()).toMatchObject({ success: false, code: 'VALIDATION_ERROR' })
      expect(response.json().details).toEqual(expect.arrayContaining([expect.objectContaining({ field, in: 'querystring' })]))
    })

    it('a q of exactly 200 characters is accepted', async () => {
      const { pagination } = await search(carolViewer, `zebra ${'x'.repeat(194)}`)
      expect(pagination.total).toBe(0)
      const long = `${'postgres '.repeat(21)}inspection!`
      expect(long).toHaveLength(200)
      expect((await search(carolViewer, long)).servers.map((s) => s.name)).toEqual(['PostgreSQL MCP Server'])
    })

    it('without credentials: 401', async () => {
      const response = await app.inject({ method: 'GET', url: searchUrl('postgres') })
      expect(response.statusCode).toBe(401)
      expect(response.json()).toMatchObject({ success: false, code: 'UNAUTHORIZED' })
    })

    it('a bearer token without mcp:read: 403 naming the required scope', async () => {
      const response = await app.inject({ method: 'GET', url: searchUrl('postgres'), headers: bearer(aliceNoCatalogue) })
      expect(response.statusCode).toBe(403)
      expect(response.json()).toMatchObject({ success: false, code: 'FORBIDDEN', details: { required_scope: 'mcp:read' } })
    })

    it('a bearer token with mcp:read searches as its user', async () => {
      expect(await names(aliceBearer, 'postgres')).toEqual(await names(aliceViewer, 'postgres'))
      expect(await names(aliceBearer, 'postgres')).toContain('Postgres Vault')
    })
  })

  describe('typos (pg_trgm)', () => {
    it.runIf(dialect === 'postgresql')('a small typo finds the server by its name', async () => {
      expect((await names(carolViewer, 'postgress'))[0]).toBe('PostgreSQL MCP Server')
      expect((await names(carolViewer, 'kubernets'))[0]).toBe('Kubernetes MCP Server')
      expect(await names(carolViewer, 'notifer')).toEqual(['Slack Notifier'])
    })

    it.runIf(dialect === 'postgresql')('typo matches come after every full-text match', async () => {
      await createServer(call, admin, { name: 'Zorrblax Exporter' })
      await createServer(call, admin, { name: 'Metrics Hub Z', description: 'Charts zorblax metrics.' })
      await createServer(call, admin, { name: 'Zorblax Dashboards' })
      expect(await names(carolViewer, 'zorblax')).toEqual(['Zorblax Dashboards', 'Metrics Hub Z', 'Zorrblax Exporter'])
    })

    it.runIf(dialect === 'postgresql')('a fragment from inside a word is not a typo of it', async () => {
      expect(await names(carolViewer, 'redis')).toEqual(['Redis Cache', 'Session Store'])
    })

    it.runIf(dialect === 'postgresql')('typo matches honour visibility and filters', async () => {
      expect(await names(carolViewer, 'postgress')).not.toContain('Postgres Vault')
      expect(await names(aliceViewer, 'postgress')).toContain('Postgres Vault')
      expect(await names(carolViewer, 'postgress', { transport_type: 'http' })).toEqual([])
    })

    it.runIf(dialect === 'sqlite')('SQLite has no typo matching: only words and prefixes match', async () => {
      expect(await names(carolViewer, 'postgress')).toEqual([])
      expect(await names(carolViewer, 'redis')).toEqual(['Redis Cache', 'Session Store'])
    })
  })

  describe('the index follows every write at once', () => {
    const fresh = (body: Record<string, unknown>) => createServer(call, admin, { slug: `sync-${++seq}`, ...body })
    const put = async (id: string, body: Record<string, unknown>) => {
      const response = await call('PUT', `/api/mcp/servers/global/${id}`, admin, body)
      expect(response.statusCode, response.body).toBe(200)
    }
    const slugsFor = async (q: string) => bySlug((await search(carolViewer, q, { limit: 100 })).servers)

    it('a new server is found at once', async () => {
      const server = await fresh({ name: 'Quokka Indexer', description: 'Indexes marsupials.', tags: ['wombat'] })
      expect(await slugsFor('quokka')).toEqual([server.slug])
      expect(await slugsFor('marsup')).toEqual([server.slug])
      expect(await slugsFor('womb')).toEqual([server.slug])
    })

    it('after a rename, the new name is found and the old one not', async () => {
      const server = await fresh({ name: 'Lantern Gadget', description: 'Lights the way.' })
      await put(server.id, { name: 'Beacon Gadget' })
      expect(await slugsFor('lantern')).toEqual([])
      expect(await slugsFor('beacon')).toEqual([server.slug])
      expect(await slugsFor('gadget lights')).toEqual([server.slug])
    })

    it('after new tags, the new tags are found and the old ones not', async () => {
      const server = await fresh({ name: 'Tagged Thing', tags: ['marmalade', 'toast'] })
      await put(server.id, { tags: ['Porridge'] })
      expect(await slugsFor('marmalade')).toEqual([])
      expect(await slugsFor('toast')).toEqual([])
      expect(await slugsFor('porr')).toEqual([server.slug])
      await put(server.id, { tags: [] })
      expect(await slugsFor('porridge')).toEqual([])
    })

    it('after a new description, the new words are found and the old ones not', async () => {
      const server = await fresh({ name: 'Described Thing', description: 'Speaks of zeppelins.' })
      await put(server.id, { description: 'Speaks of submarines.' })
      expect(await slugsFor('zeppelins')).toEqual([])
      expect(await slugsFor('submarine')).toEqual([server.slug])
    })

    it('a rename moves a server into the name ranking', async () => {
      const watch = await fresh({ name: 'Walrus Watch', description: 'Counts them.' })
      const helper = await fresh({ name: 'Tusk Helper', description: 'Talks to walruses.' })
      expect(await slugsFor('walrus')).toEqual([watch.slug, helper.slug])
      await put(helper.id, { name: 'Walrus Helper' })
      const servers = (await search(carolViewer, 'walrus')).servers
      expect(bySlug(servers).sort()).toEqual([watch.slug, helper.slug].sort())
      expectNameMatchesFirst(servers, 'walrus')
      await put(helper.id, { name: 'Tusk Helper' })
      expect(await slugsFor('walrus')).toEqual([watch.slug, helper.slug])
    })

    it('a change of other fields keeps the entry, and the filters see the new values', async () => {
      const server = await fresh({ name: 'Narwhal Monitor', transport_type: 'stdio' })
      await put(server.id, { transport_type: 'sse', status: 'maintenance' })
      expect(await slugsFor('narwhal')).toEqual([server.slug])
      expect(bySlug((await search(carolViewer, 'narwhal', { transport_type: 'sse', status: 'maintenance' })).servers)).toEqual([server.slug])
      expect((await search(carolViewer, 'narwhal', { transport_type: 'stdio' })).pagination.total).toBe(0)
    })

    it('after DELETE the server is gone from the results and the total', async () => {
      const server = await fresh({ name: 'Ephemeral Ferret', description: 'Here today.', tags: ['ferret'] })
      expect((await search(carolViewer, 'ferret')).pagination.total).toBe(1)
      const response = await call('DELETE', `/api/mcp/servers/global/${server.id}`, admin)
      expect(response.statusCode, response.body).toBe(200)
      for (const q of ['ephemeral', 'ferret', 'today']) {
        const { servers, pagination } = await search(adminViewer, q)
        expect(servers, q).toEqual([])
        expect(pagination.total, q).toBe(0)
      }
    })
  })
})

describe.runIf(DIALECTS.includes('postgresql'))('searching on postgresql without pg_trgm', () => {
  let ctx: TestContext

  beforeAll(async () => {
    ctx = await createTestContext('postgresql')
  })
  afterAll(() => ctx.close())

  it('logs one warning at start; prefixes still match, typos no longer do', async () => {
    const first = (await ctx.build({ limits: ROOMY_LIMITS })).app
    const admin = await signUp(first, 'trgm_admin')
    await createServer(client(first), admin, { name: 'PostgreSQL MCP Server', description: 'SQL access.' })
    await rawRows(first.services.database, sql`drop extension pg_trgm cascade`)

    const logs = captureLogs('info')
    const second = (await ctx.build({ limits: ROOMY_LIMITS, logger: logs.logger })).app
    const warnings = logs.lines.map((line) => JSON.parse(line)).filter((entry) => entry.level === 40 && JSON.stringify(entry).includes('pg_trgm'))
    expect(warnings).toHaveLength(1)

    const get = (q: string) => second.inject({ method: 'GET', url: searchUrl(q), headers: { cookie: admin.cookie } })
    const prefix = await get('postg')
    expect(prefix.statusCode, prefix.body).toBe(200)
    expect(prefix.json().data.servers.map((s: ServerBody) => s.name)).toEqual(['PostgreSQL MCP Server'])
    for (const q of ['postgress', 'postgrse']) {
      const typo = await get(q)
      expect(typo.statusCode, typo.body).toBe(200)
      expect(typo.json().data).toEqual({ servers: [], pagination: { total: 0, limit: 20, offset: 0, has_more: false } })
    }
    // The warning is not repeated per request.
    expect(logs.lines.map((line) => JSON.parse(line)).filter((entry) => entry.level === 40 && JSON.stringify(entry).includes('pg_trgm'))).toHaveLength(1)
  }, SETUP_TIMEOUT)
})
