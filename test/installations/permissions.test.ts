import { sql } from 'drizzle-orm'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { importDocuments, install, installationOf, installationsOf, weatherDocument } from '../helpers/installations.js'
import { bearer, issueTokens } from '../helpers/oauth.js'
import { SATELLITE_LIMITS } from '../helpers/satellites.js'
import { rawRows } from '../helpers/sql.js'
import { client, crew as makeCrew, signUp, type Account, type Call, type Crew } from '../helpers/teams.js'

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'

/** What a caller gets from a route. */
const OK = 200
const CREATED = 201
const E401 = 401 // UNAUTHORIZED: no credential the route admits (a bearer on a session-only route)
const E403 = 403 // FORBIDDEN: identified, but the role does not allow it
const E404 = 404 // NOT_FOUND: not a member — the team's existence is not revealed
const SCOPE = 'scope' // 403 insufficient_scope: a bearer token without mcp:read on a route that takes one
type Outcome = typeof OK | typeof CREATED | typeof E401 | typeof E403 | typeof E404 | typeof SCOPE
const succeeds = (outcome: Outcome) => outcome === OK || outcome === CREATED

/** The callers, in the order of the matrix's columns. */
const CALLERS = [
  'team_admin', // an admin of the team, by session
  'team_user', // a member who is not an admin, by session
  'other admin', // the team_admin of another team, not a member of this one
  'global admin', // a global admin who is not a member
  'read as user', // a bearer token with mcp:read, of the team_user
  'read as admin', // a bearer token with mcp:read, of the team_admin
  'no mcp:read', // a bearer token of the team_user with every scope but mcp:read
  'nobody', // no credential at all
] as const
type CallerName = (typeof CALLERS)[number]

/** Which installation a route acts on: per-user (user-scoped input), shared, or a new one made for the call (DELETE). */
type Subject = 'per_user' | 'shared' | 'fresh' | 'none'

interface Route {
  label: string
  method: Method
  /** The path, given the team and the installation acted on. */
  path: (teamId: string, id: string) => string
  subject: Subject
  /**
   * A valid body, made for each call (given the imported server's id): a refusal must come from
   * who calls, not from what is sent, and a refused write would change something if it went through.
   */
  body?: (serverId: string) => unknown
  /** Session-only routes refuse every bearer token with 401; dual ones check its scope. */
  dual: boolean
  outcomes: Record<CallerName, Outcome>
}

const all = (teamId: string) => installationsOf(teamId)
const one = (teamId: string, id: string) => installationOf(teamId, id)
const under = (suffix: string) => (teamId: string, id: string) => `${installationOf(teamId, id)}/${suffix}`
const ME = () => '/api/users/me/mcp/installations'
const CLIENT_CONFIG = () => '/api/users/me/mcp/client-config'
const MY_TOKEN = 'ghp-matrix-personal-7a6b5c4d'

/** Bodies: each allowed write goes through, each refused one would have changed something. */
const CREATE = (serverId: string) => ({ server_id: serverId })
let renames = 0
const RENAME = () => ({ name: `matrix-renamed-${++renames}` })
const TEAM_VALUES = () => ({ values: { 'env:LOG_LEVEL': 'warn' } })
const MY_VALUES = () => ({ values: { 'env:PERSONAL_TOKEN': MY_TOKEN } })
let policies = 0
const TOOL_POLICY = () => ({ disabled_tools: [`matrix-tool-${++policies}`] })
let pins = 0
const PIN = () => ({ pin_tools: ++pins % 2 === 1 })

/** One line per route; the outcomes follow the column order of CALLERS. */
function route(label: string, method: Method, path: Route['path'], subject: Subject, body: Route['body'], outcomes: Outcome[]): Route {
  if (outcomes.length !== CALLERS.length) throw new Error(`${label}: ${outcomes.length} outcomes for ${CALLERS.length} callers`)
  return {
    label, method, path, subject, body, dual: method === 'GET',
    outcomes: Object.fromEntries(CALLERS.map((caller, index) => [caller, outcomes[index]!])) as Record<CallerName, Outcome>,
  }
}

//                                                                           team_    team_  other  global   read  read   no        nobody
//                                                                           admin    user   admin  admin    user  admin  mcp:read
const ROUTES: Route[] = [
  route('GET list', 'GET', all, 'none', undefined,                          [OK,      OK,    E404,  OK,      OK,   OK,    SCOPE,    E401]),
  route('POST create', 'POST', all, 'none', CREATE,                         [CREATED, E403,  E404,  CREATED, E401, E401,  E401,     E401]),
  route('GET one', 'GET', one, 'per_user', undefined,                       [OK,      OK,    E404,  OK,      OK,   OK,    SCOPE,    E401]),
  route('PATCH', 'PATCH', one, 'per_user', RENAME,                          [OK,      E403,  E404,  OK,      E401, E401,  E401,     E401]),
  route('PUT values', 'PUT', under('values'), 'per_user', TEAM_VALUES,      [OK,      E403,  E404,  OK,      E401, E401,  E401,     E401]),
  route('GET my-values', 'GET', under('my-values'), 'per_user', undefined,  [OK,      OK,    E404,  OK,      OK,   OK,    SCOPE,    E401]),
  // A global admin who is not a member has no values of their own to set.
  route('PUT my-values', 'PUT', under('my-values'), 'per_user', MY_VALUES,  [OK,      OK,    E404,  E403,    E401, E401,  E401,     E401]),
  route('POST restart', 'POST', under('restart'), 'per_user', undefined,    [OK,      E403,  E404,  OK,      E401, E401,  E401,     E401]),
  route('DELETE', 'DELETE', one, 'fresh', undefined,                        [OK,      E403,  E404,  OK,      E401, E401,  E401,     E401]),
  route('GET tools', 'GET', under('tools'), 'per_user', undefined,          [OK,      OK,    E404,  OK,      OK,   OK,    SCOPE,    E401]),
  route('PUT tool-policy', 'PUT', under('tool-policy'), 'per_user', TOOL_POLICY, [OK, E403, E404,  OK,      E401, E401,  E401,     E401]),
  route('PATCH pin_tools', 'PATCH', one, 'per_user', PIN,                   [OK,      E403,  E404,  OK,      E401, E401,  E401,     E401]),
  // The logs of a shared installation are the admins'; a member reads those of a per-user one (their own instance).
  route('GET logs (shared)', 'GET', under('logs'), 'shared', undefined,     [OK,      E403,  E404,  OK,      E403, OK,    SCOPE,    E401]),
  route('GET logs (per_user)', 'GET', under('logs'), 'per_user', undefined, [OK,      OK,    E404,  OK,      OK,   OK,    SCOPE,    E401]),
  // The caller's own teams: anyone signed in may ask (what a non-member sees is checked below).
  route('GET me/installations', 'GET', ME, 'none', undefined,               [OK,      OK,    OK,    OK,      OK,   OK,    SCOPE,    E401]),
  route('GET me/client-config', 'GET', CLIENT_CONFIG, 'none', undefined,    [OK,      OK,    OK,    OK,      OK,   OK,    SCOPE,    E401]),
]

const WRITES = ROUTES.filter((each) => each.method !== 'GET')
const MANAGE_WRITES = WRITES.filter((each) => each.label !== 'PUT my-values')

/**
 * Who may call each installation route, as a table: team admins, members, admins of another team,
 * global admins, bearer tokens with and without mcp:read, and nobody. The route policy answers
 * before the body is read, so a refusal never depends on the body; a refused write changes nothing.
 */
describe.each(DIALECTS)('installation permissions on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let admin: Account
  let a: Crew
  let b: Crew
  let weatherId: string
  let perUserId: string
  let sharedId: string
  const headers = new Map<CallerName, Record<string, string>>()
  let seq = 0
  const fresh = () => signUp(app, `perm_${++seq}`)

  const cookie = (account: Account) => ({ cookie: account.cookie })

  async function subjectId(subject: Subject): Promise<string> {
    if (subject === 'per_user') return perUserId
    if (subject === 'shared') return sharedId
    if (subject === 'fresh') return (await install(call, a.team.id, a.teamAdmin, { server_id: weatherId })).id
    return 'unused'
  }

  function send(caller: CallerName, method: Method, url: string, body?: Route['body']): Promise<LightMyRequestResponse> {
    const payload = body?.(weatherId)
    return app.inject({ method, url, headers: headers.get(caller)!, ...(payload === undefined ? {} : { payload: payload as object }) })
  }

  /** What refused writes must leave alone: the rows, their revisions and restarts, and the audit trail. */
  async function snapshot(): Promise<Record<string, number>> {
    const number = async (query: ReturnType<typeof sql>) => Number((await rawRows(app.services.database, query))[0]![0] ?? 0)
    return {
      installations: await number(sql`select count(*) from mcp_installations`),
      values: await number(sql`select count(*) from mcp_installation_values`),
      revisions: await number(sql`select coalesce(sum(spec_revision), 0) from mcp_installations`),
      restarts: await number(sql`select coalesce(sum(restart_generation), 0) from mcp_installations`),
      audited: await number(sql`select count(*) from audit_events where type like 'installation.%'`),
    }
  }

  function expectOutcome(response: LightMyRequestResponse, target: Route, caller: CallerName): void {
    const expected = target.outcomes[caller]
    const what = `${caller} → ${target.label}: ${response.statusCode} ${response.body.slice(0, 300)}`
    if (succeeds(expected)) {
      expect(response.statusCode, what).toBe(expected)
      expect(response.json().success, what).toBe(true)
      return
    }
    const body = response.json()
    if (expected === SCOPE) {
      expect(response.statusCode, what).toBe(403)
      expect(body, what).toMatchObject({ success: false, code: 'FORBIDDEN', details: { required_scope: 'mcp:read' } })
      expect(response.headers['www-authenticate'], what).toContain('error="insufficient_scope"')
      expect(response.headers['www-authenticate'], what).toContain('scope="mcp:read"')
      return
    }
    expect(response.statusCode, what).toBe(expected)
    expect(body.code, what).toBe({ 401: 'UNAUTHORIZED', 403: 'FORBIDDEN', 404: 'NOT_FOUND' }[expected])
    // The OAuth resources (dual routes) tell an anonymous client where to get a token.
    if (expected === E401 && target.dual) expect(response.headers['www-authenticate'], what).toMatch(/^Bearer resource_metadata="/)
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: SATELLITE_LIMITS })).app
    call = client(app)
    admin = await signUp(app, 'perm_admin')
    a = await makeCrew(call, fresh, 'Permission Team A')
    b = await makeCrew(call, fresh, 'Permission Team B')
    weatherId = (await importDocuments(call, admin, [weatherDocument('io.github.example/weather-permissions')]))[0]!
    perUserId = (await install(call, a.team.id, a.teamAdmin, {
      server_id: weatherId, name: 'matrix-per-user', user_scoped: ['env:PERSONAL_TOKEN'], values: { 'env:WEATHER_API_KEY': 'team-key' },
    })).id
    sharedId = (await install(call, a.team.id, a.teamAdmin, { server_id: weatherId, name: 'matrix-shared' })).id

    // Tokens approved for team A: a token reaches the team it was bound to at consent only
    // (test/oauth/team-bound-tokens.test.ts covers the others).
    const forTeamA = { teamId: a.team.id }
    const readAsUser = await issueTokens(app, a.teamUser.cookie, 'mcp:read', forTeamA)
    const readAsAdmin = await issueTokens(app, a.teamAdmin.cookie, 'mcp:read', forTeamA)
    const noRead = await issueTokens(app, a.teamUser.cookie, 'user:read account:read teams:read', forTeamA)
    expect(noRead.scope.split(' ')).not.toContain('mcp:read')
    headers.set('team_admin', cookie(a.teamAdmin))
    headers.set('team_user', cookie(a.teamUser))
    headers.set('other admin', cookie(b.teamAdmin))
    headers.set('global admin', cookie(admin))
    headers.set('read as user', bearer(readAsUser.access_token))
    headers.set('read as admin', bearer(readAsAdmin.access_token))
    headers.set('no mcp:read', bearer(noRead.access_token))
    headers.set('nobody', {})
  })
  afterAll(() => ctx.close())

  it.each(ROUTES.map((each) => [each.label, each] as const))('%s: every caller gets what the matrix says', async (_label, target) => {
    for (const caller of CALLERS) {
      const id = await subjectId(target.subject)
      const url = target.path(a.team.id, id)
      const refusedWrite = target.method !== 'GET' && !succeeds(target.outcomes[caller])
      const before = refusedWrite ? await snapshot() : undefined
      expectOutcome(await send(caller, target.method, url, target.body), target, caller)
      if (before !== undefined) expect(await snapshot(), `${caller} → ${target.label} wrote something`).toEqual(before)
    }
  })

  it('the routes of the caller\'s own teams show a non-member nothing of the team, even when asked for it by id', async () => {
    for (const caller of ['other admin', 'global admin'] as const) {
      for (const url of [ME(), `${ME()}?team_id=${a.team.id}`]) {
        const listed = await send(caller, 'GET', url)
        expect(listed.statusCode, listed.body).toBe(200)
        const ids = (listed.json().data.installations as Array<{ team_id: string }>).map((each) => each.team_id)
        expect(ids, `${caller} ${url}`).not.toContain(a.team.id)
      }
      const config = await send(caller, 'GET', `${CLIENT_CONFIG()}?team_id=${a.team.id}`)
      expect(config.json().data.mcpServers, caller).toEqual({})
    }
    // A member's token lists the team's installations.
    const mine = await send('read as user', 'GET', `${ME()}?team_id=${a.team.id}&limit=100`)
    expect((mine.json().data.installations as Array<{ id: string }>).map((each) => each.id)).toEqual(expect.arrayContaining([perUserId, sharedId]))
  })

  it('a global admin passes the team check for any id, but a team that does not exist is 404 on every team route', async () => {
    const before = await snapshot()
    for (const target of ROUTES.filter((each) => each.path !== ME && each.path !== CLIENT_CONFIG)) {
      const response = await send('global admin', target.method, target.path('no-such-team', perUserId), target.body)
      expect(response.statusCode, `${target.label}: ${response.body}`).toBe(404)
      expect(response.json().code).toBe('NOT_FOUND')
    }
    expect(await snapshot()).toEqual(before)
  })

  describe('the policy answers before the body is read', () => {
    const MALFORMED = { 'content-type': 'application/json', payload: '{"values": {"env:LOG_LEVEL": ' }
    const WRONG_TYPE = { 'content-type': 'text/plain', payload: 'values=everything' }

    const raw = (caller: CallerName, target: Route, body: typeof MALFORMED) =>
      app.inject({
        method: target.method, url: target.path(a.team.id, perUserId),
        headers: { ...headers.get(caller)!, 'content-type': body['content-type'] }, payload: body.payload,
      })

    it.each(WRITES.map((each) => [each.label, each] as const))('%s with no credential: 401 for a malformed body and for a wrong content type', async (_label, target) => {
      const before = await snapshot()
      for (const body of [MALFORMED, WRONG_TYPE]) {
        const response = await raw('nobody', target, body)
        expect(response.statusCode, `${body['content-type']}: ${response.body}`).toBe(401)
        expect(response.json().code).toBe('UNAUTHORIZED')
      }
      expect(await snapshot()).toEqual(before)
    })

    it.each(MANAGE_WRITES.map((each) => [each.label, each] as const))('%s by a team_user: 403 for a malformed body and for a wrong content type', async (_label, target) => {
      const before = await snapshot()
      for (const body of [MALFORMED, WRONG_TYPE]) {
        const response = await raw('team_user', target, body)
        expect(response.statusCode, `${body['content-type']}: ${response.body}`).toBe(403)
        expect(response.json()).toMatchObject({ code: 'FORBIDDEN', details: { required_permission: 'team.installations.manage' } })
      }
      expect(await snapshot()).toEqual(before)
    })

    it('the same bodies from a team_admin are a 400 and a 415: the refusals above were not about the body', async () => {
      const values = ROUTES.find((each) => each.label === 'PUT values')!
      const before = await snapshot()
      const malformed = await raw('team_admin', values, MALFORMED)
      expect(malformed.statusCode, malformed.body).toBe(400)
      const wrongType = await raw('team_admin', values, WRONG_TYPE)
      expect(wrongType.statusCode, wrongType.body).toBe(415)
      expect(await snapshot()).toEqual(before)
    })
  })
})
