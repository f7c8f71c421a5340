/**
 * Connections end to end, everything real and on loopback: the backend listening on a port, an
 * OAuth authorization server (oidc-provider, test/helpers/upstream-oauth.ts) and the remote MCP
 * server it protects (the official SDK's streamable HTTP server checking its bearer tokens,
 * test/helpers/protected-mcp-server.ts), both allowed through OUTBOUND_ALLOWED_HOSTS; the
 * reference satellite as a real process; members' browsers in headless Chromium.
 *
 * A catalogue entry names the protected server as a remote; a team installs it and the probe finds
 * that it wants OAuth: the installation shows an oauth input and reads needs_auth. Two members
 * each sign in to the backend in a browser, ask to connect, follow the authorization URL, sign in
 * at the authorization server as an account of their own, consent, and land on the callback page,
 * which says what was connected. The satellite runs an instance for each; an MCP client (the
 * official SDK) calling `whoami` through the satellite gets each member's own upstream subject.
 * With access tokens of a short lifetime the refresher renews them before they expire; the same
 * client session keeps working with the new token, with nothing restarted. A refresh token revoked
 * at the authorization server turns that member's connection expired, the installation reads
 * needs_auth for them and their instance leaves the satellite. A member removed from the team loses
 * their connection, and their refresh token is revoked at the authorization server. No token ever shows
 * in an answer of the backend or a line of its log.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { and, eq } from 'drizzle-orm'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { FastifyInstance } from 'fastify'
import type { BrowserContext } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest'
import { DEFAULT_PASSWORD } from '../helpers/accounts.js'
import { createTestContext, TEST_SECRET, type TestContext } from '../helpers/app.js'
import { chromiumRequired, useChromium } from '../helpers/chromium.js'
import { DIALECTS } from '../helpers/database.js'
import { importDocuments, installationOf, installationsOf, type InstallationBody } from '../helpers/installations.js'
import { captureLogs, type LogCapture } from '../helpers/log-capture.js'
import { issueTokens } from '../helpers/oauth.js'
import { freePort } from '../helpers/oauth-e2e.js'
import { startProtectedMcpServer, type ProtectedMcpServer } from '../helpers/protected-mcp-server.js'
import { SATELLITE_ENTRY, satelliteBuilt, startSatelliteProcess, type SatelliteProcess } from '../helpers/satellite-process.js'
import { createToken } from '../helpers/satellites.js'
import { addMember, client, createTeam, signUp, type Account, type Call, type TeamBody } from '../helpers/teams.js'
import { startAuthorizationServer, type AuthorizationServer } from '../helpers/upstream-oauth.js'
import { waitFor } from '../satellite/support.js'
import { connectionTokensBox, type ConnectionTokens } from '../../src/modules/connections/tokens-box.js'

/** The access tokens' lifetime at the authorization server: short, so the test sees refreshes. */
const ACCESS_TOKEN_TTL_S = 20
/** How often the backend's refresher looks for due connections here (15 s by default). */
const REFRESH_INTERVAL_MS = 500
/** A change reaches the satellite within a second normally, at worst at its next poll. */
const CONVERGE_MS = 35_000

interface ConnectionView { key: string; scope: string; status: string; account: string | null; scopes: string[]; expires_at: string | null; connected_at: string | null }

/** The satellite runs from dist/ (`npm test` builds first); elsewhere the test is skipped without it, under CI it fails. */
const satelliteRequired = satelliteBuilt || process.env.CI !== undefined
if (!satelliteRequired) console.warn('connections/end-to-end.test.ts: skipped, the reference satellite is not built (npm run build)')

describe.skipIf(!chromiumRequired || !satelliteRequired)('connections end to end', () => {
  const chromium = useChromium('connections/end-to-end.test.ts')

  describe.each(DIALECTS)('on %s', (dialect) => {
    let ctx: TestContext
    let logs: LogCapture
    let app: FastifyInstance
    let base: string
    let call: Call
    let as: AuthorizationServer
    let remote: ProtectedMcpServer
    let satellite: SatelliteProcess
    let admin: Account
    let owner: Account
    let alice: Account
    let bob: Account
    let team: TeamBody
    let installation: InstallationBody
    let key: string
    const contexts: BrowserContext[] = []
    /** Content Security Policy reports of the backend's pages. */
    const violations: string[] = []
    const clients: Client[] = []
    /** Every answer body of the backend the test read, searched for tokens at the end. */
    const answers: string[] = []
    /** Every token the test saw stored, searched for in answers and logs at the end. */
    const seenTokens = new Set<string>()
    const upstream = { alice: `alice-upstream-${dialect}`, bob: `bob-upstream-${dialect}` }
    let seq = 0

    const record = <T extends { body: string }>(response: T): T => (answers.push(response.body), response)
    const api: Call = async (...args) => record(await call(...args))
    const connectionsPath = () => `${installationOf(team.id, installation.id)}/connections`
    const view = async (as: Account): Promise<InstallationBody> => {
      const response = await api('GET', installationOf(team.id, installation.id), as)
      expect(response.statusCode, response.body).toBe(200)
      return response.json().data.installation
    }
    const connectionOf = async (member: Account): Promise<ConnectionView | undefined> => {
      const response = await api('GET', connectionsPath(), member)
      expect(response.statusCode, response.body).toBe(200)
      return (response.json().data.connections as ConnectionView[]).find((one) => one.key === key)
    }
    const printOnFailure = () => onTestFailed(() => {
      console.error(`the satellite's output:\n${satellite?.output()}`)
      console.error(`the backend's last log lines:\n${logs.lines.slice(-60).join('')}`)
    })

    /** What a member does in the browser: sign in to the backend, connect, sign in upstream, consent. */
    async function connectInBrowser(member: Account, upstreamLogin: string): Promise<string> {
      const context = await chromium().newContext()
      contexts.push(context)
      // oidc-provider's development pages import a web font; the tests reach loopback only.
      await context.route(/fonts\.googleapis\.com/, (route) => route.abort())
      // Reports a violation of the backend pages' Content Security Policy even when the browser would not log one.
      await context.addInitScript({
        content: "document.addEventListener('securitypolicyviolation', (event) => console.error(`CSP violation: ${event.violatedDirective} ${event.blockedURI}`))",
      })
      const page = await context.newPage()
      page.on('console', (message) => {
        if (page.url().startsWith(base) && /Content Security Policy|CSP violation/i.test(message.text())) violations.push(`${page.url()}: ${message.text()}`)
      })
      expect((await page.goto(`${base}/api/auth/sign-in`))?.status()).toBe(200)
      await page.getByLabel('Email or username').fill(member.username)
      await page.getByLabel('Password', { exact: true }).fill(DEFAULT_PASSWORD)
      await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Sign in', exact: true }).click()])
      expect(page.url()).toBe(`${base}/api/auth/account`)

      // The connect request, as the account's page script would send it: same origin, the session cookie.
      const started = await context.request.post(`${base}${connectionsPath()}`, { data: { key }, headers: { origin: base } })
      const startedBody = await started.text()
      answers.push(startedBody)
      expect(started.status(), startedBody).toBe(200)
      const authorizationUrl = new URL((JSON.parse(startedBody) as { data: { authorization_url: string } }).data.authorization_url)
      expect(authorizationUrl.origin).toBe(new URL(as.issuer).origin)
      // The request itself (resource, PKCE, state) was pushed to the server first (RFC 9126) where it
      // offers that, as oidc-provider does; otherwise it is in the URL.
      if (authorizationUrl.searchParams.has('request_uri')) expect(authorizationUrl.searchParams.get('client_id')).toEqual(expect.any(String))
      else {
        expect(authorizationUrl.searchParams.get('resource')).toBe(remote.resource)
        expect(authorizationUrl.searchParams.get('code_challenge_method')).toBe('S256')
      }

      // oidc-provider's development interactions: any login, then consent.
      await page.goto(authorizationUrl.toString())
      await page.locator('input[name="login"]').fill(upstreamLogin)
      await page.locator('input[name="password"]').fill('any password')
      await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Sign-in' }).click()])
      await Promise.all([page.waitForURL((url) => url.pathname === '/api/oauth/upstream/callback'), page.getByRole('button', { name: 'Continue' }).click()])
      await page.waitForLoadState()
      expect(violations).toEqual([])
      expect(await page.getByRole('link', { name: 'Back' }).count()).toBe(1)
      const text = await page.locator('body').innerText()
      answers.push(await page.content())
      return text
    }

    /** An MCP client of `member` on the installation's endpoint at the satellite, with a token from the backend. */
    async function mcpClientOf(member: Account): Promise<Client> {
      const { access_token: token } = await issueTokens(app, member.cookie, 'mcp:read', { teamId: team.id, resource: `${satellite.url}/mcp` })
      const mcp = new Client({ name: 'connections-e2e', version: '1.0.0' })
      await mcp.connect(new StreamableHTTPClientTransport(new URL(`${satellite.url}/mcp/${installation.id}`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }))
      clients.push(mcp)
      return mcp
    }
    /** A member's tokens as the backend keeps them (opened with the test's secret). */
    async function storedTokensOf(member: Account): Promise<ConnectionTokens> {
      const { db, t } = app.services.database
      const [row] = await db.select().from(t.oauthConnections).where(and(eq(t.oauthConnections.installationId, installation.id), eq(t.oauthConnections.userId, member.id)))
      const tokens = connectionTokensBox(TEST_SECRET).openTokens({ installationId: installation.id, userId: member.id, inputKey: key }, row!.sealed)
      seenTokens.add(tokens.access_token)
      if (tokens.refresh_token !== undefined) seenTokens.add(tokens.refresh_token)
      return tokens
    }
    const whoami = async (mcp: Client): Promise<string> =>
      ((await mcp.callTool({ name: 'whoami', arguments: {} })).content as Array<{ text: string }>)[0]!.text

    beforeAll(async () => {
      if (!satelliteBuilt) throw new Error(`${SATELLITE_ENTRY} is missing: run \`npm run build\` first`)
      ctx = await createTestContext(dialect)
      logs = captureLogs('debug')
      as = await startAuthorizationServer({ accessTokenTTL: ACCESS_TOKEN_TTL_S })
      remote = await startProtectedMcpServer({ issuer: as.issuer, jwksUri: as.jwksUri, scopes: ['mcp:tools', 'offline_access'] })
      const port = await freePort()
      base = `http://127.0.0.1:${port}`
      const allowed = [new URL(as.issuer).host, new URL(remote.url).host].join(',')
      ;({ app } = await ctx.build({
        env: { PUBLIC_URL: base, RATE_LIMIT_ENABLED: 'false', OUTBOUND_ALLOWED_HOSTS: allowed },
        logger: logs.logger,
        connectionRefreshMs: REFRESH_INTERVAL_MS,
      }))
      await app.listen({ host: '127.0.0.1', port })
      call = client(app)
      const fresh = (name: string) => signUp(app, `${name}_${dialect}_${++seq}`)
      admin = await fresh('admin') // the first user: a global admin
      owner = await fresh('owner')
      alice = await fresh('alice')
      bob = await fresh('bob')
      team = await createTeam(call, owner, `Connections ${dialect}`)
      await addMember(call, team.id, owner, alice, 'team_user')
      await addMember(call, team.id, owner, bob, 'team_user')
      const token = await createToken(call, owner, { teamId: team.id })
      satellite = await startSatelliteProcess({ backendUrl: base, registrationToken: token.token, name: `conn-e2e-${dialect}` })
    }, 60_000)

    afterAll(async () => {
      await Promise.all(clients.map((mcp) => mcp.close().catch(() => undefined)))
      await Promise.all(contexts.map((context) => context.close().catch(() => undefined)))
      await satellite?.stop()
      await app?.close()
      await remote?.close()
      await as?.close()
      await ctx?.close()
    })

    it('installs a remote catalogue server whose probe finds OAuth: an oauth input per member, needs_auth', async () => {
      printOnFailure()
      const [serverId] = await importDocuments(call, admin, [{
        $schema: 'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json',
        name: `io.github.example/protected-${dialect}`,
        description: 'A remote MCP server protected by OAuth.',
        version: '1.0.0',
        remotes: [{ type: 'streamable-http', url: remote.resource }],
      }])
      const satelliteId = await waitFor(async () => {
        const listed = await api('GET', `/api/teams/${team.id}/satellites`, owner)
        return (listed.json().data.satellites as Array<{ id: string; status: string }>).find((one) => one.status === 'active')?.id
      }, 'the satellite to report itself active')
      const created = await api('POST', installationsOf(team.id), owner, { server_id: serverId, name: 'protected', target: { kind: 'remote', index: 0 }, satellite_id: satelliteId })
      expect(created.statusCode, created.body).toBe(201)
      installation = created.json().data.installation
      const oauthInput = installation.inputs.find((input) => input.kind === 'oauth')
      expect(oauthInput).toMatchObject({ key: `oauth:${remote.resource}`, scope: 'user', required: true, secret: true })
      key = oauthInput!.key
      // The probe found the remote's metadata: it was asked for it, unauthenticated.
      expect(remote.refused.some((refusal) => refusal.authorization === undefined)).toBe(true)
      const shown = await view(alice)
      expect(shown.status).toBe('needs_auth')
      expect(await connectionOf(alice)).toMatchObject({ key, status: 'missing' })
    })

    it('lets two members connect their own upstream accounts in a browser; the callback page says what was connected', async () => {
      printOnFailure()
      for (const [member, login] of [[alice, upstream.alice], [bob, upstream.bob]] as const) {
        const page = await connectInBrowser(member, login)
        expect(page).toContain(`Connected to protected-${dialect}`)
        expect(page).toContain(`with the account ${login}`)
        expect(await connectionOf(member)).toMatchObject({ key, scope: 'user', status: 'connected', account: login })
        const stored = await storedTokensOf(member)
        expect(stored.refresh_token).toEqual(expect.any(String))
        expect(page).not.toContain(stored.access_token)
      }
      const mine = await api('GET', '/api/users/me/connections', alice)
      expect(mine.statusCode, mine.body).toBe(200)
      expect(mine.json().data.connections).toEqual([expect.objectContaining({ installation_id: installation.id, team_id: team.id, key, status: 'connected', account: upstream.alice })])
    }, 120_000)

    it("runs an instance per connected member; whoami through the satellite answers each member's own upstream subject", async () => {
      printOnFailure()
      await waitFor(async () => (await view(alice)).status === 'running', "alice's instance to run", CONVERGE_MS)
      await waitFor(async () => (await view(bob)).status === 'running', "bob's instance to run", CONVERGE_MS)
      expect(await whoami(await mcpClientOf(alice))).toBe(upstream.alice)
      expect(await whoami(await mcpClientOf(bob))).toBe(upstream.bob)
      // The owner connected nothing: no instance of theirs.
      await expect(mcpClientOf(owner).then(whoami)).rejects.toThrow()
    }, CONVERGE_MS * 2 + 10_000)

    it('refreshes the tokens before they expire; the same client session keeps working with the new token, nothing restarted', async () => {
      printOnFailure()
      const mcp = await mcpClientOf(alice)
      expect(await whoami(mcp)).toBe(upstream.alice)
      const first = remote.accepted.filter((one) => one.sub === upstream.alice).at(-1)!
      const session = first.sessionId
      const before = (await connectionOf(alice))!.expires_at!
      const firstTokens = await storedTokensOf(alice)
      // Refreshed ahead of the expiry: the view shows a later expiry before the first token ran out.
      const renewed = await waitFor(async () => {
        const now = await connectionOf(alice)
        return now?.expires_at !== before && now
      }, 'the refresh', ACCESS_TOKEN_TTL_S * 1000 + 5_000)
      expect(Date.now()).toBeLessThan(Date.parse(before))
      expect(renewed).toMatchObject({ status: 'connected' })
      const renewedTokens = await storedTokensOf(alice)
      expect(renewedTokens.access_token).not.toBe(firstTokens.access_token)
      // Rotation honoured: the new refresh token replaced the used one.
      expect(renewedTokens.refresh_token).not.toBe(firstTokens.refresh_token)
      // Past the first token's expiry, the same session still calls through, with the new token.
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, Date.parse(before) - Date.now() + 1000)))
      expect(await whoami(mcp)).toBe(upstream.alice)
      const last = remote.accepted.filter((one) => one.sub === upstream.alice).at(-1)!
      expect(last.authorization).not.toBe(first.authorization)
      expect(last.sessionId).toBe(session)
      expect(remote.refused.filter((refusal) => refusal.authorization !== undefined)).toEqual([])
    }, ACCESS_TOKEN_TTL_S * 2000 + 20_000)

    it("marks bob's connection expired when his refresh token is revoked at the authorization server: needs_auth for him", async () => {
      printOnFailure()
      // The grant behind bob's refresh token ends at the authorization server (as when he revokes
      // the app there): his next refresh gets invalid_grant.
      const { refresh_token: refreshToken } = await storedTokensOf(bob)
      const models = as.provider as unknown as {
        RefreshToken: { find(token: string): Promise<{ accountId: string; grantId: string } | undefined> }
        Grant: { find(id: string): Promise<{ destroy(): Promise<void> } | undefined> }
      }
      const stored = await models.RefreshToken.find(refreshToken!)
      expect(stored?.accountId).toBe(upstream.bob)
      await (await models.Grant.find(stored!.grantId))!.destroy()
      const expired = await waitFor(async () => {
        const now = await connectionOf(bob)
        return now?.status === 'expired' && now
      }, "bob's connection to expire", ACCESS_TOKEN_TTL_S * 1000 + 10_000)
      expect(expired.key).toBe(key)
      const shown = await view(bob)
      expect(shown.status).toBe('needs_auth')
      expect(shown.status_reason).toMatch(/connect/i)
      expect((await connectionOf(alice))?.status).toBe('connected')
      // His instance left the satellite (no token for it any more): his client finds none there; alice's still answers.
      await waitFor(() => mcpClientOf(bob).then(whoami).then(() => false, () => true), "bob's instance to leave the satellite", CONVERGE_MS)
      expect(await whoami(await mcpClientOf(alice))).toBe(upstream.alice)
    }, ACCESS_TOKEN_TTL_S * 1000 + CONVERGE_MS + 20_000)

    it('forgets the connection of a member removed from the team', async () => {
      printOnFailure()
      const { refresh_token: refreshToken } = await storedTokensOf(alice)
      expect(await as.introspect(refreshToken!)).toMatchObject({ active: true, sub: upstream.alice })
      const removed = await api('DELETE', `/api/teams/${team.id}/members/${alice.id}`, owner)
      expect(removed.statusCode, removed.body).toBeLessThan(300)
      const mine = await api('GET', '/api/users/me/connections', alice)
      expect(mine.statusCode, mine.body).toBe(200)
      expect(mine.json().data.connections).toEqual([])
      const { db, t } = app.services.database
      expect(await db.select().from(t.oauthConnections).where(eq(t.oauthConnections.userId, alice.id))).toEqual([])
      // Revoked upstream too (RFC 7009), after the removal's commit.
      await waitFor(async () => (await as.introspect(refreshToken!)).active === false, "alice's refresh token to be revoked at the authorization server")
    })

    it('never shows a token in an answer or a log line of the backend', () => {
      const tokens = new Set<string>()
      for (const accepted of remote.accepted) tokens.add(accepted.authorization.replace(/^Bearer /i, ''))
      for (const issued of seenTokens) tokens.add(issued)
      expect(tokens.size).toBeGreaterThan(2)
      const logText = logs.text()
      expect(logs.lines.length).toBeGreaterThan(10)
      // The capture covers the refresher's lines too.
      expect(logText).toContain('connections refreshed')
      const answered = answers.join('\n')
      const satelliteOutput = satellite.output()
      for (const token of tokens) {
        expect(logText.includes(token), `a token in the backend's log`).toBe(false)
        expect(answered.includes(token), `a token in an answer`).toBe(false)
        expect(satelliteOutput.includes(token), `a token in the satellite's output`).toBe(false)
      }
    })
  })
})
