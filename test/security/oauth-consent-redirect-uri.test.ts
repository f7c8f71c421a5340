import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { sql } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import type { Request } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { chromiumRequired, useChromium } from '../helpers/chromium.js'
import { DIALECTS } from '../helpers/database.js'
import {
  authorizeAndApprove, authorizeParams, consentRequestId, locationOf, locationParams, pkce, startAuthorization,
} from '../helpers/oauth.js'
import { ALL_SCOPES, CLI_CLIENT_ID, registerOverHttp, startOAuthServer, type OAuthServer } from '../helpers/oauth-e2e.js'
import { rawRows } from '../helpers/sql.js'
import { signUp, type Account } from '../helpers/teams.js'

/**
 * RFC 8252 §7.3 lets a native client's loopback redirect URI take any port, and a remembered
 * approval skips the consent page. Together they handed a code, with no interaction, to whatever
 * local process listened on another port (RFC 8252 §8.6). A remembered approval now covers only
 * the exact redirect URIs (port included) the user approved; any other port shows the consent page
 * again (prompt=none: consent_required), and consents remembered before redirect URIs were recorded
 * ask again.
 */
const callback = (port: number) => `http://127.0.0.1:${port}/oauth/callback`

describe.each(DIALECTS)('remembered consent is bound to the approved redirect URI on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let user: Account

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ env: { RATE_LIMIT_ENABLED: 'false' } })).app
    await signUp(app, `ports_admin_${dialect.slice(0, 2)}`)
    user = await signUp(app, `ports_user_${dialect.slice(0, 2)}`)
  })
  afterAll(() => ctx.close())

  it('approved on port A: port B asks again (prompt=none → consent_required, no code); port A skips the page', async () => {
    const first = await authorizeAndApprove(app, user.cookie, { redirectUri: callback(41001), scope: 'user:read' })
    expect(first.skipped).toBe(false)

    const other = await startAuthorization(app, authorizeParams(pkce().challenge, { redirect_uri: callback(41002), scope: 'user:read' }), user.cookie)
    expect(other.statusCode).toBe(302)
    expect(consentRequestId(locationOf(other)), `went to ${locationOf(other)}`).toBeDefined()

    const silent = await startAuthorization(app, authorizeParams(pkce().challenge, { redirect_uri: callback(41002), scope: 'user:read', prompt: 'none' }), user.cookie)
    const silentLocation = locationOf(silent)!
    expect(silentLocation.startsWith(callback(41002))).toBe(true)
    expect(locationParams(silentLocation).get('error')).toBe('consent_required')
    expect(locationParams(silentLocation).get('code')).toBeNull()

    const again = await authorizeAndApprove(app, user.cookie, { redirectUri: callback(41001), scope: 'user:read' })
    expect(again.skipped).toBe(true)
    expect(again.redirectUrl.startsWith(`${callback(41001)}?`)).toBe(true)
  })

  it('approving port B as well remembers both; a consent recorded without redirect URIs asks again', async () => {
    await authorizeAndApprove(app, user.cookie, { redirectUri: callback(41102), scope: 'user:read' })
    for (const port of [41001, 41102]) {
      expect((await authorizeAndApprove(app, user.cookie, { redirectUri: callback(port), scope: 'user:read' })).skipped).toBe(true)
    }
    // A consent remembered before the redirect URIs were recorded (the column is empty).
    await rawRows(app.services.database, sql`update oauth_consents set redirect_uris = null where user_id = ${user.id} and client_id = ${CLI_CLIENT_ID}`)
    expect((await authorizeAndApprove(app, user.cookie, { redirectUri: callback(41001), scope: 'user:read' })).skipped).toBe(false)
    expect((await authorizeAndApprove(app, user.cookie, { redirectUri: callback(41001), scope: 'user:read' })).skipped).toBe(true)
  })
})

/** A local process listening on a loopback port: it records every request it gets. */
async function listener(): Promise<{ server: Server; port: number; hits: string[] }> {
  const hits: string[] = []
  const server = createServer((request, response) => {
    // The callback only (the browser also asks for /favicon.ico).
    if ((request.url ?? '').startsWith('/oauth/callback')) hits.push(request.url ?? '')
    response.writeHead(200, { 'content-type': 'text/plain' }).end('received')
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { server, port: (server.address() as AddressInfo).port, hits }
}

describe.skipIf(!chromiumRequired)('the loopback port case in headless Chromium', () => {
  const chromiumBrowser = useChromium('oauth-consent-redirect-uri.test.ts')

  describe.each(DIALECTS)('on %s', (dialect) => {
    let ctx: TestContext
    let server: OAuthServer

    beforeAll(async () => {
      ctx = await createTestContext(dialect)
      server = await startOAuthServer(ctx)
      await registerOverHttp(server.base, 'ports_browser_admin')
    })
    afterAll(() => ctx?.close())

    it('approve on port A; port B shows the consent page and never gets a code; port A again skips the page', async () => {
      const { base } = server
      const user = await registerOverHttp(base, 'ports_browser_user')
      const portA = await listener()
      const portB = await listener()
      const context = await chromiumBrowser().newContext()
      try {
        await context.addCookies([{ name: 'auth_session', value: user.cookie.slice('auth_session='.length), url: base }])
        const page = await context.newPage()
        const requests: Request[] = []
        page.on('request', (request) => requests.push(request))
        const authUrl = (port: number) => {
          const url = new URL(`${base}/api/oauth2/auth`)
          const params = authorizeParams(pkce().challenge, { client_id: CLI_CLIENT_ID, redirect_uri: callback(port), scope: ALL_SCOPES })
          for (const [key, value] of Object.entries(params)) if (value !== undefined) url.searchParams.set(key, value)
          return url.toString()
        }
        const approveButton = page.locator('button[name="decision"][value="approve"]')

        // Port A: the consent page, Approve, the code reaches A.
        await page.goto(authUrl(portA.port))
        await approveButton.waitFor({ timeout: 15_000 })
        await Promise.all([page.waitForURL((url) => url.port === String(portA.port), { timeout: 15_000 }), approveButton.click()])
        expect(portA.hits).toHaveLength(1)
        expect(new URL(portA.hits[0]!, base).searchParams.get('code')).toMatch(/\S/)

        // Port B, another local process: the consent page again, and B hears nothing.
        requests.length = 0
        await page.goto(authUrl(portB.port))
        await approveButton.waitFor({ timeout: 15_000 })
        expect(new URL(page.url()).pathname).toBe('/api/oauth2/consent')
        expect(portB.hits).toEqual([])
        expect(requests.filter((request) => request.url().includes(`:${portB.port}/`))).toEqual([])

        // Port A again: straight back with a code, no consent page on the way.
        requests.length = 0
        await page.goto(authUrl(portA.port))
        expect(new URL(page.url()).port).toBe(String(portA.port))
        expect(portA.hits).toHaveLength(2)
        expect(new URL(portA.hits[1]!, base).searchParams.get('code')).toMatch(/\S/)
        expect(requests.filter((request) => new URL(request.url()).pathname === '/api/oauth2/consent')).toEqual([])
      } finally {
        await context.close()
        portA.server.close()
        portB.server.close()
      }
    }, 60_000)
  })
})
