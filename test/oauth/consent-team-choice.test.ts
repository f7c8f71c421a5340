import { eq } from 'drizzle-orm'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { importDocuments, install, type InstallationBody } from '../helpers/installations.js'
import {
  authorizeParams, consentDetails, consentRequestId, exchangeCode, htmlElement, htmlTags, introspect, isHtml, locationOf, pkce, postConsent,
  registerClient, startAuthorization, unescapeHtml, type Pkce,
} from '../helpers/oauth.js'
import { defaultTeamOf } from '../helpers/placement.js'
import { createToken, pair, SATELLITE_LIMITS, type Paired } from '../helpers/satellites.js'
import { client, createTeam, signUp, type Account, type Call, type TeamBody } from '../helpers/teams.js'

const CALLBACK = 'http://127.0.0.1:9/callback'
const SCOPE = 'mcp:read offline_access'
const SAT_ALPHA = 'https://alpha.sat.example.com'
const SAT_SHARED = 'https://shared.sat.example.com/edge'
const SAT_STRANGER = 'https://stranger.sat.example.com'

/** A server with nothing to configure: installations of it are placed wherever they are asked to be. */
const plainDocument = (name: string) => ({
  $schema: 'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json',
  name,
  description: 'A tool with no settings.',
  version: '1.0.0',
  packages: [{ registryType: 'npm', identifier: '@example/plain-tool', version: '1.0.0', transport: { type: 'stdio' } }],
})

interface Pending {
  requestId: string
  pair: Pkce
  clientId: string
}

interface Details {
  teams: Array<{ id: string; name: string; selected: boolean }>
  scopes: Array<{ name: string; description: string }>
  satellite_name: string | null
  resource: string | null
  csrf_token: string
}

/**
 * The consent page chooses the team the token will be bound to, on the server: the team the
 * request's resource names (a team satellite's, the user's team with installations on a global
 * satellite, an endpoint's installation's), else the one chosen last for the client, else a team
 * with installations, else the default team — and an approval without `team_id` binds exactly
 * that team. Each case runs with a client of its own, so that nothing chosen earlier leaks in.
 */
describe.each(DIALECTS)('the team the consent page chooses on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let admin: Account
  let user: Account
  let stranger: Account
  let defaultTeam: string
  let alpha: TeamBody
  let beta: TeamBody
  let gamma: TeamBody
  let strangerTeam: TeamBody
  let alphaSatellite: Paired
  let shared: Paired
  let strangerSatellite: Paired
  let inAlpha: InstallationBody
  let inGamma: InstallationBody
  let inStranger: InstallationBody
  let seq = 0

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: SATELLITE_LIMITS, env: { RATE_LIMIT_ENABLED: 'false' } })).app
    call = client(app)
    admin = await signUp(app, 'choice_admin')
    user = await signUp(app, 'choice_user')
    stranger = await signUp(app, 'choice_stranger')
    defaultTeam = await defaultTeamOf(call, user)
    const [serverId] = await importDocuments(call, admin, [plainDocument('io.github.example/plain-tool')])
    alpha = await createTeam(call, user, 'Alpha')
    beta = await createTeam(call, user, 'Beta')
    gamma = await createTeam(call, user, 'Gamma')
    strangerTeam = await createTeam(call, stranger, 'Stranger Team')
    alphaSatellite = await pair(app, (await createToken(call, user, { teamId: alpha.id })).token, 'alpha-edge', { satellite_url: SAT_ALPHA })
    shared = await pair(app, (await createToken(call, admin)).token, 'shared-edge', { satellite_url: SAT_SHARED })
    strangerSatellite = await pair(app, (await createToken(call, stranger, { teamId: strangerTeam.id })).token, 'stranger-edge', { satellite_url: SAT_STRANGER })
    const put = (team: TeamBody, by: Account, name: string, satellite: Paired) => install(call, team.id, by, { server_id: serverId, name, satellite_id: satellite.id })
    // On the global satellite: Beta has two installations, Gamma one, the stranger's team one.
    inAlpha = await put(alpha, user, 'alpha-tool', alphaSatellite)
    await put(beta, user, 'beta-tool-1', shared)
    await put(beta, user, 'beta-tool-2', shared)
    inGamma = await put(gamma, user, 'gamma-tool', shared)
    inStranger = await put(strangerTeam, stranger, 'stranger-tool', strangerSatellite)
    await put(strangerTeam, stranger, 'stranger-shared-tool', shared)
  })
  afterAll(() => ctx.close())

  const newClient = () => registerClient(app, { client_name: `Choosing client ${++seq}`, redirect_uris: [CALLBACK] })

  /** /auth as `account`; `prompt=consent` shows the page even when this client's approval is remembered. */
  async function start(account: Account, clientId: string, resource?: string, prompt?: 'consent'): Promise<LightMyRequestResponse> {
    const pair = pkce()
    const response = await startAuthorization(app, authorizeParams(pair.challenge, {
      client_id: clientId, redirect_uri: CALLBACK, scope: SCOPE, ...(resource === undefined ? {} : { resource }), ...(prompt === undefined ? {} : { prompt }),
    }), account.cookie)
    ;(response as LightMyRequestResponse & { pair?: Pkce }).pair = pair
    return response
  }

  /** /auth, which must lead to the consent page. */
  async function pending(account: Account, clientId: string, resource?: string, prompt?: 'consent'): Promise<Pending> {
    const response = await start(account, clientId, resource, prompt)
    const requestId = consentRequestId(locationOf(response))
    if (requestId === undefined) throw new Error(`no consent page: ${response.statusCode} ${locationOf(response)} ${response.body}`)
    return { requestId, pair: (response as LightMyRequestResponse & { pair: Pkce }).pair, clientId }
  }

  async function details(account: Account, request: Pending): Promise<Details> {
    const response = await consentDetails(app, request.requestId, account.cookie)
    expect(response.statusCode, response.body).toBe(200)
    const data = response.json().data as Details
    expect(data.teams.filter((team) => team.selected), 'exactly one team selected').toHaveLength(1)
    return data
  }

  const selectedOf = (data: Details) => data.teams.find((team) => team.selected)!.id

  /** Approves without `team_id` (or with it), exchanges the code and answers the token's team by introspection. */
  async function approve(account: Account, request: Pending, data: Details, teamId?: string): Promise<string | null> {
    const decided = await postConsent(app, { request_id: request.requestId, decision: 'approve', csrf_token: data.csrf_token, ...(teamId === undefined ? {} : { team_id: teamId }) }, account.cookie)
    expect(decided.statusCode, decided.body).toBe(200)
    return teamOfCode(new URL(decided.json().data.redirect_url), request)
  }

  async function teamOfCode(callback: URL, request: { pair: Pkce; clientId: string }): Promise<string | null> {
    const code = callback.searchParams.get('code')
    expect(code, callback.href).toMatch(/\S/)
    const tokens = await exchangeCode(app, { code: code!, verifier: request.pair.verifier, redirectUri: CALLBACK, clientId: request.clientId })
    expect(tokens.statusCode, tokens.body).toBe(200)
    expect(tokens.json().refresh_token).toEqual(expect.any(String))
    const answer = await introspect(app, tokens.json().access_token, { cookie: admin.cookie })
    expect(answer.json()).toMatchObject({ active: true, sub: account(request).id })
    return answer.json().team_id
  }
  const owners = new Map<string, Account>()
  const account = (request: { clientId: string }) => owners.get(request.clientId) ?? user

  const mcpRead = (data: Details) => data.scopes.find((scope) => scope.name === 'mcp:read')!.description

  describe('the order of the rules, each approved without team_id', () => {
    const cases: Array<[string, () => string, () => string, string | null]> = [
      ['a team satellite\'s resource: its team', () => `${SAT_ALPHA}/mcp`, () => alpha.id, 'alpha-edge'],
      ['the same with a trailing slash', () => `${SAT_ALPHA}/mcp/`, () => alpha.id, 'alpha-edge'],
      ['a global satellite\'s resource: the user\'s team with the most installations there', () => `${SAT_SHARED}/mcp`, () => beta.id, 'shared-edge'],
      ['an endpoint URL: its installation\'s team (Gamma, although Beta has more there)', () => `${SAT_SHARED}/mcp/${inGamma.id}`, () => gamma.id, 'shared-edge'],
      ['an endpoint URL on a team satellite', () => `${SAT_ALPHA}/mcp/${inAlpha.id}`, () => alpha.id, 'alpha-edge'],
      ['another team\'s satellite: not the user\'s, so the next rules (a team with installations: Beta)', () => `${SAT_STRANGER}/mcp`, () => beta.id, null],
      ['another team\'s endpoint: not the user\'s, so that satellite falls through as well', () => `${SAT_STRANGER}/mcp/${inStranger.id}`, () => beta.id, null],
      ['an unknown installation on the global satellite: the satellite\'s rule', () => `${SAT_SHARED}/mcp/no-such-installation`, () => beta.id, 'shared-edge'],
      ['an unknown resource: a team with installations', () => 'https://unknown.example.com/mcp', () => beta.id, null],
      ['no resource: a team with installations', () => '', () => beta.id, null],
    ]

    it.each(cases)('%s', async (_, resource, expected, satelliteName) => {
      const clientId = await newClient()
      const request = await pending(user, clientId, resource() === '' ? undefined : resource())
      const data = await details(user, request)
      expect(selectedOf(data)).toBe(expected())
      expect(data.satellite_name).toBe(satelliteName)
      expect(data.resource).toBe(resource() === '' ? null : resource())
      const team = data.teams.find((option) => option.selected)!.name
      if (satelliteName !== null) expect(mcpRead(data)).toBe(`Use the MCP servers of team ${team} on satellite ${satelliteName}`)
      else if (resource() !== '') expect(mcpRead(data)).toBe(`Use the MCP servers of team ${team} at ${resource()}`)
      else expect(mcpRead(data)).toContain(`team ${team}`)
      // The approval binds what was selected: the client never says which team.
      expect(await approve(user, request, data)).toBe(expected())
    })

    it('the team chosen last time for this client comes before a team with installations', async () => {
      const clientId = await newClient()
      const first = await pending(user, clientId)
      expect(await approve(user, first, await details(user, first), alpha.id)).toBe(alpha.id)
      const second = await pending(user, clientId, undefined, 'consent')
      const data = await details(user, second)
      expect(selectedOf(data)).toBe(alpha.id)
      expect(await approve(user, second, data)).toBe(alpha.id)
    })

    it('a global satellite where several teams have installations: the one chosen last for this client, else the one with the most', async () => {
      const clientId = await newClient()
      const first = await pending(user, clientId, `${SAT_SHARED}/mcp`)
      const firstData = await details(user, first)
      expect(selectedOf(firstData)).toBe(beta.id)
      expect(await approve(user, first, firstData, gamma.id)).toBe(gamma.id)
      // Gamma also has installations there: chosen last, it is selected now (Beta has more).
      const second = await pending(user, clientId, `${SAT_SHARED}/mcp`, 'consent')
      const data = await details(user, second)
      expect(selectedOf(data)).toBe(gamma.id)
      expect(await approve(user, second, data)).toBe(gamma.id)
      // Chosen last but with nothing on that satellite: the resource's rule wins over it.
      const third = await pending(user, clientId, undefined, 'consent')
      expect(await approve(user, third, await details(user, third), alpha.id)).toBe(alpha.id)
      const fourth = await pending(user, clientId, `${SAT_SHARED}/mcp`)
      expect(selectedOf(await details(user, fourth))).toBe(beta.id)
    })

    it('no installations in any team: the default team; installations in the default team: the default team first', async () => {
      const fresh = await signUp(app, `choice_fresh_${dialect}`)
      const extra = await createTeam(call, fresh, 'Fresh Extra')
      const freshDefault = await defaultTeamOf(call, fresh)
      const clientId = await newClient()
      owners.set(clientId, fresh)
      const request = await pending(fresh, clientId)
      const data = await details(fresh, request)
      expect(selectedOf(data)).toBe(freshDefault)
      expect(data.teams.map((team) => team.id)).toEqual([freshDefault, extra.id])
      expect(await approve(fresh, request, data)).toBe(freshDefault)

      // Two installations in the extra team, one in the default team: the default team still.
      const [serverId] = await importDocuments(call, admin, [plainDocument(`io.github.example/plain-${dialect}`)])
      await install(call, extra.id, fresh, { server_id: serverId, name: 'extra-1' })
      await install(call, extra.id, fresh, { server_id: serverId, name: 'extra-2' })
      const otherClient = await newClient()
      owners.set(otherClient, fresh)
      const before = await details(fresh, await pending(fresh, otherClient))
      expect(selectedOf(before), 'a team with installations when the default team has none').toBe(extra.id)
      await install(call, freshDefault, fresh, { server_id: serverId, name: 'own-1' })
      const thirdClient = await newClient()
      owners.set(thirdClient, fresh)
      expect(selectedOf(await details(fresh, await pending(fresh, thirdClient)))).toBe(freshDefault)
    })
  })

  describe('remembered consent', () => {
    it('skips the page while the resource names the remembered team (or none), and asks again, with the resource\'s team selected, when it names another', async () => {
      const clientId = await newClient()
      const first = await pending(user, clientId, `${SAT_ALPHA}/mcp`)
      expect(await approve(user, first, await details(user, first))).toBe(alpha.id)

      // The same resource: straight back to the client, bound to Alpha.
      const again = await start(user, clientId, `${SAT_ALPHA}/mcp`)
      expect(consentRequestId(locationOf(again))).toBeUndefined()
      expect(await teamOfCode(new URL(locationOf(again)!), { pair: (again as LightMyRequestResponse & { pair: Pkce }).pair, clientId })).toBe(alpha.id)

      // The global satellite, where Beta's installations are: the page, with Beta selected.
      const elsewhere = await start(user, clientId, `${SAT_SHARED}/mcp`)
      const requestId = consentRequestId(locationOf(elsewhere))
      expect(requestId, 'the consent page is shown').toBeDefined()
      const request = { requestId: requestId!, pair: (elsewhere as LightMyRequestResponse & { pair: Pkce }).pair, clientId }
      const data = await details(user, request)
      expect(selectedOf(data)).toBe(beta.id)
      expect(await approve(user, request, data)).toBe(beta.id)

      // No resource names no team: the remembered one (Beta now) is bound without a page.
      const plain = await start(user, clientId)
      expect(consentRequestId(locationOf(plain))).toBeUndefined()
      expect(await teamOfCode(new URL(locationOf(plain)!), { pair: (plain as LightMyRequestResponse & { pair: Pkce }).pair, clientId })).toBe(beta.id)
      // Another team's satellite names none of the user's teams: the remembered one too.
      const foreign = await start(user, clientId, `${SAT_STRANGER}/mcp`)
      expect(consentRequestId(locationOf(foreign))).toBeUndefined()
    })
  })

  describe('the page', () => {
    it('names the satellite, says what mcp:read does there, and preselects the team (HTML, strict CSP, no script)', async () => {
      const clientId = await newClient()
      const request = await pending(user, clientId, `${SAT_ALPHA}/mcp`)
      const response = await app.inject({ method: 'GET', url: `/api/oauth2/consent?request_id=${encodeURIComponent(request.requestId)}`, headers: { accept: 'text/html', cookie: user.cookie } })
      expect(response.statusCode).toBe(200)
      expect(isHtml(response)).toBe(true)
      expect(String(response.headers['content-security-policy'])).toContain("default-src 'none'")
      expect(response.body).not.toMatch(/<script/i)
      // What a reader sees: the text without its tags.
      const text = unescapeHtml(response.body.replace(/<[^>]*>/g, ''))
      expect(text).toContain('Use the MCP servers of team Alpha on satellite alpha-edge')
      expect(text).toContain('For the MCP servers on satellite alpha-edge')
      const options = htmlTags(htmlElement(response.body, 'select', 'name', 'team_id')!, 'option')
      expect(options.filter((option) => 'selected' in option).map((option) => option.value)).toEqual([alpha.id])
      expect(options.map((option) => option.value).sort()).toEqual([defaultTeam, alpha.id, beta.id, gamma.id].sort())
    })

    it('never names another team\'s satellite', async () => {
      const request = await pending(user, await newClient(), `${SAT_STRANGER}/mcp`)
      const data = await details(user, request)
      expect(data.satellite_name).toBeNull()
      const response = await app.inject({ method: 'GET', url: `/api/oauth2/consent?request_id=${encodeURIComponent(request.requestId)}`, headers: { accept: 'text/html', cookie: user.cookie } })
      expect(response.body).not.toContain('stranger-edge')
      expect(data.teams.map((team) => team.id)).not.toContain(strangerTeam.id)
    })

    it('before sign-in: no teams, no satellite name', async () => {
      const pair = pkce()
      const response = await startAuthorization(app, authorizeParams(pair.challenge, { client_id: await newClient(), redirect_uri: CALLBACK, scope: SCOPE, resource: `${SAT_ALPHA}/mcp` }))
      const requestId = consentRequestId(locationOf(response))!
      const anonymous = await consentDetails(app, requestId)
      expect(anonymous.statusCode).toBe(200)
      expect(anonymous.json().data).toMatchObject({ teams: [], satellite_name: null, signed_in: false, resource: `${SAT_ALPHA}/mcp` })
      expect(JSON.stringify(anonymous.json())).not.toContain('alpha-edge')
    })
  })

  describe('refusals stay as they were', () => {
    it('a resource naming a team of someone else cannot bind it: team_id of that team → 400 INVALID_TEAM, nothing decided', async () => {
      const request = await pending(user, await newClient(), `${SAT_STRANGER}/mcp`)
      const data = await details(user, request)
      const refused = await postConsent(app, { request_id: request.requestId, decision: 'approve', csrf_token: data.csrf_token, team_id: strangerTeam.id }, user.cookie)
      expect(refused.statusCode).toBe(400)
      expect(refused.json()).toMatchObject({ success: false, code: 'INVALID_TEAM' })
      expect(await approve(user, request, data)).toBe(beta.id)
    })

    it.each([
      ['not a URI', 'not a uri'],
      ['a fragment', `${SAT_ALPHA}/mcp#frag`],
    ])('a resource that is %s: invalid_target redirect, as before', async (_, resource) => {
      const clientId = await newClient()
      // A client this user approved before gets its errors by redirect.
      const first = await pending(user, clientId)
      await approve(user, first, await details(user, first))
      const response = await start(user, clientId, resource)
      expect(response.statusCode).toBe(302)
      const location = new URL(locationOf(response)!)
      expect(`${location.origin}${location.pathname}`).toBe(CALLBACK)
      expect(location.searchParams.get('error')).toBe('invalid_target')
    })

    it('a user with no team left: nothing selected, approval → 400 INVALID_TEAM', async () => {
      const loner = await signUp(app, `choice_loner_${dialect}`)
      const clientId = await newClient()
      owners.set(clientId, loner)
      const request = await pending(loner, clientId, `${SAT_ALPHA}/mcp`)
      // The default team cannot be left; delete it as the database would for a removed team.
      const { db, t } = app.services.database
      await db.delete(t.teams).where(eq(t.teams.id, await defaultTeamOf(call, loner)))
      const response = await consentDetails(app, request.requestId, loner.cookie)
      expect(response.statusCode, response.body).toBe(200)
      expect(response.json().data.teams).toEqual([])
      const refused = await postConsent(app, { request_id: request.requestId, decision: 'approve', csrf_token: response.json().data.csrf_token }, loner.cookie)
      expect(refused.statusCode).toBe(400)
      expect(refused.json().code).toBe('INVALID_TEAM')
    })
  })
})
