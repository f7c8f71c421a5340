import { sql } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { startDocumentServer, type DocumentServer } from '../helpers/document-server.js'
import { authorizeParams, authorizeUrl, pkce } from '../helpers/oauth.js'
import { rawRows } from '../helpers/sql.js'

/**
 * The consent page names the client by its `client_name`; a registered client or a metadata
 * document must not take the name of the service's own command-line client ("Service Gateway CLI"),
 * however it is spelled (case, spaces, punctuation, full-width letters): 400 invalid_client_metadata
 * at registration, and a refused document at /auth.
 */
const IMITATIONS = ['Service Gateway CLI', 'service-gateway-cli', '  SERVICE   gateway.CLI!', 'Service Gateway CLI (official)', 'Ｓｅｒｖｉｃｅ Ｇａｔｅｗａｙ ＣＬＩ', 'Service_Gateway_CLI']

describe.each(DIALECTS)('no client may call itself the CLI on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let server: DocumentServer

  const clients = async () => Number((await rawRows(app.services.database, sql`select count(*) from oauth_clients`))[0]![0])
  const register = (name: string) => app.inject({ method: 'POST', url: '/api/oauth2/register', payload: { client_name: name, redirect_uris: ['https://tool.example/cb'] } })

  beforeAll(async () => {
    server = await startDocumentServer()
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ outbound: { ca: [server.ca] }, env: { RATE_LIMIT_ENABLED: 'false', OUTBOUND_ALLOWED_HOSTS: `127.0.0.1:${server.port}` } })).app
  })
  afterAll(async () => {
    await ctx.close()
    await server.close()
  })

  it.each(IMITATIONS)('registration of %j → 400 invalid_client_metadata, nothing stored', async (name) => {
    const before = await clients()
    const response = await register(name)
    expect(response.statusCode, response.body).toBe(400)
    expect(response.json()).toMatchObject({ success: false, error: 'invalid_client_metadata', code: 'INVALID_CLIENT_METADATA' })
    expect(await clients()).toBe(before)
  })

  it('other names are fine', async () => {
    for (const name of ['Gateway Service', 'My CLI', 'Service Gateway']) expect((await register(name)).statusCode).toBe(201)
  })

  it('a metadata document with the CLI\'s name is refused at /auth, without a redirect', async () => {
    const url = server.document(`/imitation-${dialect}.json`, { client_name: 'Service Gateway CLI', redirect_uris: ['http://127.0.0.1:9000/callback'] })
    const params = authorizeParams(pkce().challenge, { client_id: url, redirect_uri: 'http://127.0.0.1:9000/callback', scope: 'user:read' })
    const response = await app.inject({ method: 'GET', url: authorizeUrl(params), headers: { accept: 'application/json' } })
    expect(response.statusCode, response.body).toBe(400)
    expect(response.headers.location).toBeUndefined()
    expect(response.json().error_description).toMatch(/client_name/)
  })
})
