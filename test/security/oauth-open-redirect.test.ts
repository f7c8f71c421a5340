import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { authorizeAndApprove, authorizeParams, isHtml, locationOf, locationParams, pkce, registerClient, startAuthorization } from '../helpers/oauth.js'
import { signUp, type Account } from '../helpers/teams.js'

/**
 * Anyone may register a client with any https redirect URI, and /auth redirects its errors there:
 * a link on this service's domain that lands anywhere (RFC 9700 §4.11.2). For a registered client
 * that nobody ever approved, an unauthenticated browser gets the error as a page (or JSON) instead
 * of a redirect. The CLI client, clients someone approved, and signed-in users keep the redirect
 * (the MCP authorization spec wants errors back at a validated client).
 */
describe.each(DIALECTS)('no open redirect through unapproved registered clients on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let user: Account
  let seq = 0

  const newClient = async () => {
    const redirectUri = `https://elsewhere-${++seq}.example/landing`
    return { redirectUri, clientId: await registerClient(app, { client_name: `Tool ${seq}`, redirect_uris: [redirectUri], scope: 'user:read' }) }
  }
  /** An authorization request with an error (no PKCE), for `clientId`. */
  const faulty = (clientId: string, redirectUri: string, cookie?: string, accept?: string) =>
    app.inject({
      method: 'GET',
      url: `/api/oauth2/auth?${new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: redirectUri, state: 'xyz' })}`,
      headers: { ...(cookie === undefined ? {} : { cookie }), ...(accept === undefined ? {} : { accept }) },
    })
  const expectRedirectedError = (response: LightMyRequestResponse, redirectUri: string) => {
    expect(response.statusCode, response.body).toBe(302)
    expect(locationOf(response)!.startsWith(redirectUri)).toBe(true)
    expect(locationParams(locationOf(response)!).get('error')).toBe('invalid_request')
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ env: { RATE_LIMIT_ENABLED: 'false' } })).app
    await signUp(app, `redirect_admin_${dialect.slice(0, 2)}`)
    user = await signUp(app, `redirect_user_${dialect.slice(0, 2)}`)
  })
  afterAll(() => ctx.close())

  it('an unapproved client, no session: an error page (HTML) or JSON, never a redirect', async () => {
    const { clientId, redirectUri } = await newClient()
    const page = await faulty(clientId, redirectUri, undefined, 'text/html,application/xhtml+xml')
    expect(page.statusCode).toBe(400)
    expect(page.headers.location).toBeUndefined()
    expect(isHtml(page)).toBe(true)
    expect(page.body).not.toContain(redirectUri)
    const json = await faulty(clientId, redirectUri, undefined, 'application/json')
    expect(json.statusCode).toBe(400)
    expect(json.headers.location).toBeUndefined()
    expect(json.json()).toMatchObject({ success: false, error: 'invalid_request', error_description: expect.stringMatching(/PKCE/) })
    // Not even a valid-looking redirect to an error: an unsupported response type is a page too.
    const other = await startAuthorization(app, authorizeParams(pkce().challenge, { client_id: clientId, redirect_uri: redirectUri, response_type: 'token', scope: 'user:read' }))
    expect(other.statusCode).toBe(400)
    expect(other.headers.location).toBeUndefined()
  })

  it('the CLI client, a signed-in user, and a client someone approved still get their errors redirected', async () => {
    expectRedirectedError(await faulty('service-gateway-cli', 'http://127.0.0.1:8976/oauth/callback'), 'http://127.0.0.1:8976/oauth/callback')
    const { clientId, redirectUri } = await newClient()
    expectRedirectedError(await faulty(clientId, redirectUri, user.cookie), redirectUri)
    await authorizeAndApprove(app, user.cookie, { clientId, redirectUri, scope: 'user:read' })
    expectRedirectedError(await faulty(clientId, redirectUri), redirectUri)
  })
})
