import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cacheLifetime, isClientIdUrl } from '../../src/oauth2/client-id-documents.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { manualClock, type ManualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'
import { startDocumentServer, type DocumentServer } from '../helpers/document-server.js'
import {
  authorizeParams, authorizeUrl, bearer, consentDetails, consentRequestId, exchangeCode, isHtml, locationOf, pkce, postConsent, refresh, revoke,
  tokenRequest, type AuthorizeParams,
} from '../helpers/oauth.js'
import { signUp, type Account } from '../helpers/teams.js'

const CALLBACK = 'http://127.0.0.1:7777/callback'
const MINUTE = 60_000
const HOUR = 60 * MINUTE
/** The outbound timeout of the test apps: short, so the slow server need not be waited for 5 s. */
const TIMEOUT_MS = 1500

/** A document's usual metadata (client_id is added by the server helper). */
const METADATA = {
  client_name: 'Document Tool',
  redirect_uris: [CALLBACK],
  client_uri: 'https://tool.example.org/about',
  grant_types: ['authorization_code', 'refresh_token'],
  response_types: ['code'],
  token_endpoint_auth_method: 'none',
  scope: 'user:read teams:read offline_access',
  software_id: 'doc-tool',
  // Unknown metadata is ignored, as in registration (RFC 7591 §2).
  x_vendor_extension: { anything: true },
}

describe('which client ids are metadata document URLs', () => {
  it.each([
    ['https://tool.example.org/client.json', true],
    ['https://tool.example.org:8443/oauth/client', true],
    ['https://tool.example.org/client?v=2', true],
    ['https://tool.example.org', false],
    ['https://tool.example.org/', false],
    ['https://tool.example.org?x=1', false],
    ['http://tool.example.org/client.json', false],
    ['HTTPS://tool.example.org/client.json', false],
    ['client_0123456789abcdef', false],
    ['service-gateway-cli', false],
    ['https://', false],
  ])('%s → %s', (clientId, expected) => {
    expect(isClientIdUrl(clientId)).toBe(expected)
  })
})

describe('how long a document is cached', () => {
  const NOW = Date.parse('2026-03-01T12:00:00Z')
  const date = new Date(NOW).toUTCString()
  it.each<[Record<string, string>, number]>([
    [{}, 5 * MINUTE],
    [{ 'cache-control': 'max-age=120' }, 120_000],
    [{ 'cache-control': 'public, MAX-AGE=60, must-revalidate' }, 60_000],
    [{ 'cache-control': 'max-age="90"' }, 90_000],
    [{ 'cache-control': 'max-age=0' }, 0],
    [{ 'cache-control': 'max-age=soon' }, 0],
    [{ 'cache-control': 'no-store' }, 0],
    [{ 'cache-control': 'max-age=600, no-cache' }, 0],
    [{ 'cache-control': 'private, no-store, max-age=600' }, 0],
    [{ 'cache-control': 'max-age=31536000' }, 24 * HOUR],
    [{ 'cache-control': 'max-age=60', expires: new Date(NOW + HOUR).toUTCString(), date }, 60_000],
    [{ expires: new Date(NOW + 10 * MINUTE).toUTCString(), date }, 10 * MINUTE],
    [{ expires: new Date(NOW + 10 * MINUTE).toUTCString() }, 10 * MINUTE],
    [{ expires: new Date(NOW - MINUTE).toUTCString(), date }, 0],
    [{ expires: '0' }, 0],
    [{ expires: new Date(NOW + 7 * 24 * HOUR).toUTCString(), date }, 24 * HOUR],
  ])('%j → %i ms', (headers, expected) => {
    expect(cacheLifetime(headers, NOW)).toBe(expected)
  })
})

/**
 * Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document): a client_id that is
 * an https URL is fetched from a local https server (its self-signed CA passed to the fetcher, its
 * host in OUTBOUND_ALLOWED_HOSTS) rather than looked up among registered clients.
 */
describe.each(DIALECTS)('client ID metadata documents on %s', (dialect) => {
  let ctx: TestContext
  let server: DocumentServer
  let app: FastifyInstance
  /** Same CA, empty OUTBOUND_ALLOWED_HOSTS: private addresses are refused. */
  let strict: FastifyInstance
  let clock: ManualClock
  let user: Account
  let seq = 0

  const path = (name: string) => `/clients/${name}-${++seq}.json`
  const authorize = (target: FastifyInstance, params: AuthorizeParams, headers: Record<string, string> = { accept: 'application/json' }) =>
    target.inject({ method: 'GET', url: authorizeUrl(params), headers })
  const paramsFor = (clientId: string, overrides: AuthorizeParams = {}) =>
    authorizeParams(pkce().challenge, { client_id: clientId, redirect_uri: CALLBACK, scope: 'user:read', ...overrides })

  /** A 302 to the consent page; answers its request id. */
  function expectConsent(response: LightMyRequestResponse): string {
    expect(response.statusCode, response.body).toBe(302)
    const requestId = consentRequestId(locationOf(response))
    expect(requestId, locationOf(response)).toEqual(expect.any(String))
    return requestId!
  }

  /** A 400 that does not redirect, with `pattern` in its description. */
  function expectRefused(response: LightMyRequestResponse, pattern: RegExp, code = 'UNKNOWN_CLIENT'): string {
    expect(response.statusCode, response.body).toBe(400)
    expect(response.headers.location).toBeUndefined()
    const body = response.json()
    expect(body).toMatchObject({ success: false, error: 'invalid_request', code })
    expect(body.error_description).toMatch(pattern)
    // RFC 6749 §5.2: printable ASCII without " or \.
    expect(body.error_description).toMatch(/^[\x20\x21\x23-\x5b\x5d-\x7e]+$/)
    return body.error_description
  }

  beforeAll(async () => {
    server = await startDocumentServer()
    ctx = await createTestContext(dialect)
    clock = manualClock()
    const outbound = { ca: [server.ca], timeoutMs: TIMEOUT_MS }
    app = (await ctx.build({ clock, outbound, env: { RATE_LIMIT_ENABLED: 'false', OUTBOUND_ALLOWED_HOSTS: `127.0.0.1:${server.port}, localhost:${server.port}` } })).app
    strict = (await ctx.build({ clock, outbound, env: { RATE_LIMIT_ENABLED: 'false' } })).app
    user = await signUp(app, 'cimd_user')
  })
  afterAll(async () => {
    await ctx.close()
    await server.close()
  })

  it('the server metadata says metadata documents are supported (draft §6)', async () => {
    const metadata = (await app.inject({ method: 'GET', url: '/.well-known/oauth-authorization-server' })).json()
    expect(metadata.client_id_metadata_document_supported).toBe(true)
  })

  describe('a full authorization', () => {
    it('auth → consent (a document client) → approve → code → token with the URL as client_id → GET /api/users/me; refresh and revoke too', async () => {
      const documentPath = path('full')
      const clientId = server.document(documentPath, METADATA)
      const pair = pkce()
      const started = await authorize(app, authorizeParams(pair.challenge, { client_id: clientId, redirect_uri: CALLBACK, scope: 'user:read offline_access' }))
      const requestId = expectConsent(started)

      const details = await consentDetails(app, requestId, user.cookie)
      expect(details.statusCode, details.body).toBe(200)
      expect(details.json().data).toMatchObject({
        client_id: clientId,
        client_name: 'Document Tool',
        client_uri: 'https://tool.example.org/about',
        client_registered: false,
        client_id_document_host: `127.0.0.1:${server.port}`,
        signed_in: true,
      })
      const decided = await postConsent(app, { request_id: requestId, decision: 'approve', csrf_token: details.json().data.csrf_token }, user.cookie)
      expect(decided.statusCode, decided.body).toBe(200)
      const redirect = new URL(decided.json().data.redirect_url)
      expect(`${redirect.origin}${redirect.pathname}`).toBe(CALLBACK)
      const code = redirect.searchParams.get('code')!

      const exchanged = await exchangeCode(app, { code, verifier: pair.verifier, redirectUri: CALLBACK, clientId })
      expect(exchanged.statusCode, exchanged.body).toBe(200)
      const tokens = exchanged.json()
      expect(tokens.scope).toBe('user:read offline_access')
      const me = await app.inject({ method: 'GET', url: '/api/users/me', headers: bearer(tokens.access_token) })
      expect(me.statusCode, me.body).toBe(200)
      expect(me.json().data.username).toBe('cimd_user')

      const refreshed = await refresh(app, tokens.refresh_token, { clientId })
      expect(refreshed.statusCode, refreshed.body).toBe(200)
      expect((await revoke(app, { token: refreshed.json().refresh_token, client_id: clientId })).statusCode).toBe(200)
      expect((await app.inject({ method: 'GET', url: '/api/users/me', headers: bearer(refreshed.json().access_token) })).statusCode).toBe(401)
      // One fetch for all of it: the document's answer had no cache headers (5 minutes).
      expect(server.hits(documentPath)).toBe(1)
    })

    it('the request carries Accept: application/json', async () => {
      let accept: string | undefined
      const documentPath = path('accept')
      const clientId = server.serve(documentPath, (request, response) => {
        accept = request.headers.accept
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ client_id: `${server.origin}${documentPath}`, redirect_uris: [CALLBACK] }))
      })
      expectConsent(await authorize(app, paramsFor(clientId)))
      expect(accept).toBe('application/json')
    })

    it('the consent and sign-in pages (HTML) show the name and mark the client as not registered, with the document host', async () => {
      const clientId = server.document(path('pages'), METADATA)
      const requestId = expectConsent(await authorize(app, paramsFor(clientId)))
      const url = `/api/oauth2/consent?request_id=${encodeURIComponent(requestId)}`
      const host = `127.0.0.1:${server.port}`

      const signIn = await app.inject({ method: 'GET', url })
      expect(signIn.statusCode).toBe(200)
      expect(isHtml(signIn)).toBe(true)
      expect(signIn.body).toContain('Sign in to continue to Document Tool')
      expect(signIn.body).toContain(`Not registered with this service; its details come from <strong>${host}</strong>`)

      const consent = await app.inject({ method: 'GET', url, headers: { cookie: user.cookie } })
      expect(consent.statusCode).toBe(200)
      expect(consent.body).toContain('Document Tool wants to access your account')
      expect(consent.body).toContain(`Not registered with this service; its details come from <strong>${host}</strong>`)
      // The document's client_uri is its own claim: not shown as where the client comes from.
      expect(consent.body).not.toContain('from tool.example.org')
    })

    it('a document without client_name is named by its host; a registered client is not marked', async () => {
      const clientId = server.document(path('nameless'), { redirect_uris: [CALLBACK] })
      const requestId = expectConsent(await authorize(app, paramsFor(clientId)))
      expect((await consentDetails(app, requestId)).json().data.client_name).toBe(`127.0.0.1:${server.port}`)

      const cli = expectConsent(await authorize(app, authorizeParams(pkce().challenge)))
      const page = await app.inject({ method: 'GET', url: `/api/oauth2/consent?request_id=${cli}`, headers: { cookie: user.cookie } })
      expect(page.body).not.toContain('Not registered')
    })

    it('the redirect URIs follow the registered-client rules: another loopback port is accepted (RFC 8252 §7.3), and the code goes there', async () => {
      const clientId = server.document(path('port'), { redirect_uris: [CALLBACK] })
      const requestId = expectConsent(await authorize(app, paramsFor(clientId, { redirect_uri: 'http://127.0.0.1:41234/callback' })))
      const details = await consentDetails(app, requestId, user.cookie)
      const decided = await postConsent(app, { request_id: requestId, decision: 'approve', csrf_token: details.json().data.csrf_token }, user.cookie)
      expect(new URL(decided.json().data.redirect_url).port).toBe('41234')
    })

    it('a more specific +json content type is accepted (draft §4), and a scope beyond the document\'s is an invalid_scope redirect', async () => {
      const clientId = server.document(path('plus-json'), { redirect_uris: [CALLBACK], scope: 'user:read' }, { 'content-type': 'application/client-metadata+json; charset=utf-8' })
      expectConsent(await authorize(app, paramsFor(clientId)))
      // Signed in: a client nobody approved yet gets its errors by redirect only then (no open redirect, RFC 9700 §4.11.2).
      const wider = await authorize(app, paramsFor(clientId, { scope: 'user:read teams:read' }), { accept: 'application/json', cookie: user.cookie })
      expect(wider.statusCode).toBe(302)
      expect(new URL(locationOf(wider)!).searchParams.get('error')).toBe('invalid_scope')
      const anonymous = await authorize(app, paramsFor(clientId, { scope: 'user:read teams:read' }))
      expect(anonymous.statusCode).toBe(400)
      expect(anonymous.json()).toMatchObject({ error: 'invalid_scope', code: 'INVALID_SCOPE' })
    })
  })

  describe('refused documents: 400 at /auth, never a redirect, with the reason', () => {
    it('a redirect_uri not in the document', async () => {
      const clientId = server.document(path('other-uri'), METADATA)
      expectRefused(await authorize(app, paramsFor(clientId, { redirect_uri: 'http://127.0.0.1:7777/elsewhere' })), /redirect_uri/, 'INVALID_REDIRECT_URI')
      expectRefused(await authorize(app, paramsFor(clientId, { redirect_uri: 'https://attacker.example/callback' })), /redirect_uri/, 'INVALID_REDIRECT_URI')
    })

    it('a client_id member that is not exactly the URL', async () => {
      const documentPath = path('mismatch')
      const clientId = server.document(documentPath, { ...METADATA, client_id: `${server.origin}/clients/someone-else.json` })
      expectRefused(await authorize(app, paramsFor(clientId)), /client_id member is not exactly the URL/)
      // Not even a trailing slash or another spelling of the same URL.
      const trailing = server.document(path('trailing'), { ...METADATA, client_id: `${server.origin}${documentPath}/` })
      expectRefused(await authorize(app, paramsFor(trailing)), /client_id member/)
      const missing = server.serve(path('missing-id'), { headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: [CALLBACK] }) })
      expectRefused(await authorize(app, paramsFor(missing)), /client_id member/)
    })

    it('a document larger than 64 KiB, with Content-Length or chunked', async () => {
      const big = (url: string) => JSON.stringify({ client_id: url, redirect_uris: [CALLBACK], padding: 'x'.repeat(70 * 1024) })
      const sized = path('large')
      const withLength = server.serve(sized, { headers: { 'content-type': 'application/json' }, body: big(`${server.origin}${sized}`) })
      expectRefused(await authorize(app, paramsFor(withLength)), /larger than 64 KiB/)
      const streamed = path('large-chunked')
      const chunked = server.serve(streamed, { headers: { 'content-type': 'application/json' }, body: big(`${server.origin}${streamed}`), chunked: true })
      expectRefused(await authorize(app, paramsFor(chunked)), /larger than 64 KiB/)
    })

    it('a document just under 64 KiB is read', async () => {
      const documentPath = path('almost-large')
      const url = `${server.origin}${documentPath}`
      const base = JSON.stringify({ client_id: url, redirect_uris: [CALLBACK], padding: '' })
      const body = JSON.stringify({ client_id: url, redirect_uris: [CALLBACK], padding: 'x'.repeat(64 * 1024 - base.length) })
      expect(Buffer.byteLength(body)).toBe(64 * 1024)
      server.serve(documentPath, { headers: { 'content-type': 'application/json' }, body })
      expectConsent(await authorize(app, paramsFor(url)))
    })

    it('not JSON, not an object, or not served as JSON', async () => {
      const broken = server.serve(path('broken'), { headers: { 'content-type': 'application/json' }, body: '{"client_id": ' })
      expectRefused(await authorize(app, paramsFor(broken)), /not valid JSON/)
      const array = server.serve(path('array'), { headers: { 'content-type': 'application/json' }, body: '[]' })
      expectRefused(await authorize(app, paramsFor(array)), /not a JSON object/)
      const htmlPath = path('html')
      const html = server.serve(htmlPath, { headers: { 'content-type': 'text/html' }, body: JSON.stringify({ client_id: `${server.origin}${htmlPath}`, redirect_uris: [CALLBACK] }) })
      expectRefused(await authorize(app, paramsFor(html)), /not served as JSON \(Content-Type: text\/html\)/)
      const nonePath = path('no-type')
      const none = server.serve(nonePath, { body: JSON.stringify({ client_id: `${server.origin}${nonePath}`, redirect_uris: [CALLBACK] }) })
      expectRefused(await authorize(app, paramsFor(none)), /not served as JSON/)
    })

    it('a redirect (302) is not followed', async () => {
      const target = server.document(path('target'), METADATA)
      const moved = server.serve(path('moved'), { status: 302, headers: { location: target } })
      expectRefused(await authorize(app, paramsFor(moved)), /redirect \(HTTP 302\), and redirects are not followed/)
      expect(server.hits(new URL(target).pathname)).toBe(0)
      const permanent = server.serve(path('permanent'), { status: 308, headers: { location: target } })
      expectRefused(await authorize(app, paramsFor(permanent)), /HTTP 308/)
    })

    it('another status than 200', async () => {
      expectRefused(await authorize(app, paramsFor(`${server.origin}/clients/nowhere.json`)), /answered HTTP 404 instead of 200/)
      const failing = server.serve(path('error'), { status: 500, headers: { 'content-type': 'application/json' }, body: '{}' })
      expectRefused(await authorize(app, paramsFor(failing)), /HTTP 500/)
    })

    it('a server slower than the timeout', async () => {
      const documentPath = path('slow')
      const slow = server.serve(documentPath, {
        delayMs: TIMEOUT_MS + 2000,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_id: `${server.origin}${documentPath}`, redirect_uris: [CALLBACK] }),
      })
      const started = Date.now()
      expectRefused(await authorize(app, paramsFor(slow)), /no complete answer within 1.5 seconds/)
      expect(Date.now() - started).toBeLessThan(TIMEOUT_MS + 1500)
    })

    it('metadata this service cannot honour: a confidential auth method, a secret, a bad redirect URI, other response or grant types, a malformed scope, bad field types', async () => {
      const cases: Array<[Record<string, unknown>, RegExp]> = [
        [{ token_endpoint_auth_method: 'client_secret_basic' }, /token_endpoint_auth_method must be none/],
        [{ token_endpoint_auth_method: 'private_key_jwt', jwks_uri: 'https://tool.example.org/jwks.json' }, /token_endpoint_auth_method must be none/],
        [{ client_secret: 'shh' }, /client_secret/],
        [{ redirect_uris: ['http://tool.example.org/callback'] }, /Redirect URIs must be https, or http on a loopback host/],
        [{ redirect_uris: ['https://tool.example.org/callback#fragment'] }, /Redirect URIs must be/],
        [{ redirect_uris: [] }, /redirect_uris must NOT have fewer than 1 items/],
        [{ redirect_uris: 'https://tool.example.org/callback' }, /redirect_uris must be array/],
        [{ response_types: ['token'] }, /Only the code response type/],
        [{ grant_types: ['client_credentials'] }, /grant_types must include authorization_code/],
        [{ scope: 'user:read "admin"' }, /scope must be space-separated names of printable ASCII characters/],
        [{ client_name: 42 }, /client_name must be string/],
        [{ logo_uri: 'javascript:alert(1)' }, /logo_uri must match/],
      ]
      for (const [fields, pattern] of cases) {
        const clientId = server.document(path('bad-metadata'), { ...METADATA, ...fields })
        expectRefused(await authorize(app, paramsFor(clientId)), pattern)
      }
      const missing = server.serve(path('no-redirects'), { headers: { 'content-type': 'application/json' }, body: '' })
      expectRefused(await authorize(app, paramsFor(missing)), /not valid JSON/)
    })

    it('a client_id URL with credentials, or a . or .. segment, is refused before any fetch', async () => {
      const before = server.requests.length
      const dotted = `${server.origin}/clients/../clients/full.json`
      expectRefused(await authorize(app, paramsFor(dotted)), /\. or \.\. path segments/)
      expectRefused(await authorize(app, paramsFor(`${server.origin}/clients/%2e%2e/x.json`)), /path segments/)
      expectRefused(await authorize(app, paramsFor(`https://user:pass@127.0.0.1:${server.port}/clients/x.json`)), /user name or password/)
      expect(server.requests.length).toBe(before)
    })

    it('the HTML variant of the refusal shows the reason', async () => {
      const response = await authorize(app, paramsFor(`${server.origin}/clients/absent.json`), {})
      expect(response.statusCode).toBe(400)
      expect(isHtml(response)).toBe(true)
      expect(response.body).toContain('answered HTTP 404 instead of 200')
    })

    it('the token endpoint answers invalid_client (401) with the reason', async () => {
      const response = await tokenRequest(app, {
        grant_type: 'authorization_code', client_id: `${server.origin}/clients/absent-too.json`, code: 'x', redirect_uri: CALLBACK, code_verifier: pkce().verifier,
      })
      expect(response.statusCode).toBe(401)
      expect(response.json()).toMatchObject({ error: 'invalid_client' })
      expect(response.json().error_description).toMatch(/HTTP 404/)
    })
  })

  describe('caching', () => {
    const twice = async (clientId: string) => {
      expectConsent(await authorize(app, paramsFor(clientId)))
      expectConsent(await authorize(app, paramsFor(clientId)))
    }

    it('max-age: one fetch for two authorizations within it, another once the clock passes it', async () => {
      const documentPath = path('max-age')
      const clientId = server.document(documentPath, METADATA, { 'cache-control': 'public, max-age=120' })
      await twice(clientId)
      expect(server.hits(documentPath)).toBe(1)
      clock.advance(119_000)
      expectConsent(await authorize(app, paramsFor(clientId)))
      expect(server.hits(documentPath)).toBe(1)
      clock.advance(2000)
      await twice(clientId)
      expect(server.hits(documentPath)).toBe(2)
    })

    it('no-store and no-cache: fetched every time', async () => {
      for (const directive of ['no-store', 'no-cache', 'max-age=0']) {
        const documentPath = path('no-store')
        const clientId = server.document(documentPath, METADATA, { 'cache-control': directive })
        await twice(clientId)
        expect(server.hits(documentPath), directive).toBe(2)
      }
    })

    it('without cache headers: 5 minutes', async () => {
      const documentPath = path('default')
      const clientId = server.document(documentPath, METADATA)
      await twice(clientId)
      clock.advance(5 * MINUTE - 1000)
      expectConsent(await authorize(app, paramsFor(clientId)))
      expect(server.hits(documentPath)).toBe(1)
      clock.advance(2000)
      expectConsent(await authorize(app, paramsFor(clientId)))
      expect(server.hits(documentPath)).toBe(2)
    })

    it('a longer max-age is capped at 24 hours', async () => {
      const documentPath = path('long')
      const clientId = server.document(documentPath, METADATA, { 'cache-control': 'max-age=31536000' })
      await twice(clientId)
      clock.advance(24 * HOUR - 1000)
      expectConsent(await authorize(app, paramsFor(clientId)))
      expect(server.hits(documentPath)).toBe(1)
      clock.advance(2000)
      expectConsent(await authorize(app, paramsFor(clientId)))
      expect(server.hits(documentPath)).toBe(2)
    })

    it('failures are not cached: a document that fails once works on the next request', async () => {
      const documentPath = path('flaky')
      const url = `${server.origin}${documentPath}`
      let calls = 0
      server.serve(documentPath, (_request, response) => {
        calls += 1
        if (calls === 1) return void response.writeHead(503).end()
        response.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=600' }).end(JSON.stringify({ client_id: url, redirect_uris: [CALLBACK] }))
      })
      expectRefused(await authorize(app, paramsFor(url)), /HTTP 503/)
      await twice(url)
      expect(calls).toBe(2)
    })

    it('a changed document is seen once the cached one expires', async () => {
      const documentPath = path('changing')
      const clientId = server.document(documentPath, METADATA, { 'cache-control': 'max-age=60' })
      expectConsent(await authorize(app, paramsFor(clientId)))
      server.document(documentPath, { ...METADATA, redirect_uris: ['https://tool.example.org/new-callback'] }, { 'cache-control': 'max-age=60' })
      expectConsent(await authorize(app, paramsFor(clientId)))
      clock.advance(61_000)
      expectRefused(await authorize(app, paramsFor(clientId)), /redirect_uri/, 'INVALID_REDIRECT_URI')
    })
  })

  describe('SSRF: addresses that are not public', () => {
    it('the same server, with an empty OUTBOUND_ALLOWED_HOSTS: refused without connecting', async () => {
      const documentPath = path('private')
      const clientId = server.document(documentPath, METADATA)
      const before = server.requests.length
      expectRefused(await authorize(strict, paramsFor(clientId)), /its host is a non-public address \(loopback\), which this service does not connect to/)
      // A host name is resolved and checked the same way.
      expectRefused(await authorize(strict, paramsFor(`https://localhost:${server.port}${documentPath}`)), /its host resolves to a non-public address \(loopback\)/)
      expect(server.requests.length).toBe(before)
      // The allowlisted app fetches the very same URL.
      expectConsent(await authorize(app, paramsFor(clientId)))
    })

    it('private, loopback, link-local, unique-local, mapped and other special-use literals', async () => {
      const cases: Array<[string, RegExp]> = [
        ['https://10.0.0.1/client.json', /non-public address \(private\)/],
        ['https://192.168.1.20:8443/client.json', /non-public address \(private\)/],
        ['https://[::1]/client.json', /non-public address \(loopback\)/],
        ['https://169.254.169.254/latest/meta-data/client', /non-public address \(link-local\)/],
        ['https://[fd00::1]/client.json', /non-public address \(unique-local\)/],
        ['https://[fe80::1]/client.json', /non-public address \(link-local\)/],
        ['https://[::ffff:127.0.0.1]/client.json', /non-public address \(loopback, IPv4-mapped\)/],
        ['https://[::ffff:a9fe:a9fe]/client.json', /non-public address \(link-local, IPv4-mapped\)/],
        ['https://0.0.0.0/client.json', /non-public address \(unspecified\)/],
        ['https://[::]/client.json', /non-public address \(unspecified\)/],
        ['https://224.0.0.1/client.json', /non-public address \(multicast\)/],
        ['https://100.64.0.1/client.json', /non-public address \(shared, carrier-grade NAT\)/],
        ['https://127.1/client.json', /non-public address \(loopback\)/],
        ['https://2130706433/client.json', /non-public address \(loopback\)/],
      ]
      for (const [clientId, pattern] of cases) {
        const started = Date.now()
        expectRefused(await authorize(strict, paramsFor(clientId)), pattern)
        // Refused at once, not after a connection attempt timed out.
        expect(Date.now() - started, clientId).toBeLessThan(TIMEOUT_MS)
      }
    })

    it('OUTBOUND_ALLOWED_HOSTS with another port does not open this one', async () => {
      const other = (await ctx.build({ clock, outbound: { ca: [server.ca], timeoutMs: TIMEOUT_MS }, env: { RATE_LIMIT_ENABLED: 'false', OUTBOUND_ALLOWED_HOSTS: '127.0.0.1:1' } })).app
      const clientId = server.document(path('other-port'), METADATA)
      expectRefused(await authorize(other, paramsFor(clientId)), /non-public address \(loopback\)/)
      const hostOnly = (await ctx.build({ clock, outbound: { ca: [server.ca], timeoutMs: TIMEOUT_MS }, env: { RATE_LIMIT_ENABLED: 'false', OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' } })).app
      expectConsent(await authorize(hostOnly, paramsFor(clientId)))
    })

    it('an allowlisted host name connects to the address it resolved to (localhost, certificate checked for that name)', async () => {
      const documentPath = path('by-name')
      const clientId = `https://localhost:${server.port}${documentPath}`
      server.document(documentPath, { ...METADATA, client_id: clientId })
      expectConsent(await authorize(app, paramsFor(clientId)))
      expect(server.hits(documentPath)).toBe(1)
    })

    it('a certificate no trusted CA signed is a failed fetch', async () => {
      const untrusting = (await ctx.build({ clock, outbound: { timeoutMs: TIMEOUT_MS }, env: { RATE_LIMIT_ENABLED: 'false', OUTBOUND_ALLOWED_HOSTS: `127.0.0.1:${server.port}` } })).app
      expectRefused(await authorize(untrusting, paramsFor(server.document(path('untrusted'), METADATA))), /could not be fetched \(DEPTH_ZERO_SELF_SIGNED_CERT\)/)
    })
  })

  describe('client ids that are not metadata document URLs: ordinary (unknown) clients, nothing fetched', () => {
    it('an http URL, a URL without a path, or with only /', async () => {
      const before = server.requests.length
      for (const clientId of [
        `http://127.0.0.1:${server.port}/clients/full.json`,
        `https://127.0.0.1:${server.port}`,
        `https://127.0.0.1:${server.port}/`,
        `https://127.0.0.1:${server.port}?client=1`,
      ]) {
        const description = expectRefused(await authorize(app, paramsFor(clientId)), /Unknown or missing client_id/)
        expect(description, clientId).toBe('Unknown or missing client_id.')
      }
      expect(server.requests.length).toBe(before)
    })
  })
})
