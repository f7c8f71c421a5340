import { sql } from 'drizzle-orm'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { startDocumentServer, type DocumentServer } from '../helpers/document-server.js'
import { authorizeParams, authorizeUrl, consentRequestId, locationOf, pkce } from '../helpers/oauth.js'
import { rawRows } from '../helpers/sql.js'

/**
 * GET /api/oauth2/auth is anonymous, stores a pending request each time and may fetch a Client ID
 * Metadata Document: it is limited per IP like the token endpoint, and the uncached document
 * fetches it may cause are bounded per IP and for the whole service. Past a bound: 429 with
 * Retry-After, `temporarily_unavailable`, nothing stored, nothing fetched.
 */
const MINUTE = 60_000

describe.each(DIALECTS)('the authorization endpoint is bounded on %s', (dialect) => {
  let ctx: TestContext
  let server: DocumentServer
  let seq = 0

  const storedRequests = async (app: FastifyInstance) =>
    Number((await rawRows(app.services.database, sql`select count(*) from oauth_requests`))[0]![0])
  const authorize = (app: FastifyInstance, remoteAddress: string, overrides: Record<string, string> = {}) =>
    app.inject({ method: 'GET', url: authorizeUrl(authorizeParams(pkce().challenge, overrides)), remoteAddress, headers: { accept: 'application/json' } })
  const expectLimited = (response: LightMyRequestResponse) => {
    expect(response.statusCode, response.body).toBe(429)
    expect(response.headers.location).toBeUndefined()
    expect(Number(response.headers['retry-after'])).toBeGreaterThan(0)
    expect(response.json()).toMatchObject({ success: false, error: 'temporarily_unavailable', code: 'RATE_LIMITED' })
  }
  /** A metadata document of its own, for a client whose redirect URI is on loopback. */
  const document = () => {
    const path = `/clients/${dialect}-${++seq}.json`
    return { path, url: server.document(path, { client_name: `Tool ${seq}`, redirect_uris: ['http://127.0.0.1:9000/callback'] }) }
  }
  const withDocument = (url: string) => ({ client_id: url, redirect_uri: 'http://127.0.0.1:9000/callback', scope: 'user:read' })

  beforeAll(async () => {
    server = await startDocumentServer()
    ctx = await createTestContext(dialect)
  })
  afterAll(async () => {
    await ctx.close()
    await server.close()
  })

  it('N+1 requests from one IP: 429 with Retry-After, and no more requests stored; another IP is not affected', async () => {
    const { app } = await ctx.build({ limits: { authorize: { max: 5, windowMs: MINUTE } } })
    const before = await storedRequests(app)
    for (let i = 0; i < 5; i += 1) {
      const response = await authorize(app, '10.7.0.1')
      expect(response.statusCode, response.body).toBe(302)
      expect(consentRequestId(locationOf(response))).toBeDefined()
    }
    expect(await storedRequests(app)).toBe(before + 5)
    expectLimited(await authorize(app, '10.7.0.1'))
    expect(await storedRequests(app)).toBe(before + 5)
    expect((await authorize(app, '10.7.0.2')).statusCode).toBe(302)
  })

  it('distinct metadata documents beyond the per-IP and the global bound are not fetched', async () => {
    const { app } = await ctx.build({
      outbound: { ca: [server.ca] },
      env: { OUTBOUND_ALLOWED_HOSTS: `127.0.0.1:${server.port}` },
      limits: {
        authorize: { max: 1000, windowMs: MINUTE },
        clientDocumentFetch: { max: 2, windowMs: MINUTE },
        clientDocumentFetchGlobal: { max: 4, windowMs: MINUTE },
      },
    })
    const docs = Array.from({ length: 6 }, document)
    // One IP: two distinct documents are fetched, the third is not.
    for (const doc of docs.slice(0, 2)) expect((await authorize(app, '10.8.0.1', withDocument(doc.url))).statusCode).toBe(302)
    expectLimited(await authorize(app, '10.8.0.1', withDocument(docs[2]!.url)))
    expect(server.hits(docs[2]!.path)).toBe(0)
    // A cached document costs no fetch: still served to that IP.
    expect((await authorize(app, '10.8.0.1', withDocument(docs[0]!.url))).statusCode).toBe(302)
    expect(server.hits(docs[0]!.path)).toBe(1)

    // Other IPs have budgets of their own, until the service-wide bound (4) is reached.
    expect((await authorize(app, '10.8.0.2', withDocument(docs[2]!.url))).statusCode).toBe(302)
    expect((await authorize(app, '10.8.0.3', withDocument(docs[3]!.url))).statusCode).toBe(302)
    expectLimited(await authorize(app, '10.8.0.4', withDocument(docs[4]!.url)))
    expect(server.hits(docs[4]!.path)).toBe(0)

    // The token endpoint resolves client_ids too: it draws on the same budgets.
    const token = await app.inject({
      method: 'POST', url: '/api/oauth2/token', remoteAddress: '10.8.0.5',
      payload: { grant_type: 'refresh_token', refresh_token: 'nothing-0123456789', client_id: docs[5]!.url },
    })
    expectLimited(token)
    expect(server.hits(docs[5]!.path)).toBe(0)
  })
})
