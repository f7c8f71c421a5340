import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { addVersion, createServer, insertTeamServer } from '../helpers/catalogue.js'
import { DIALECTS } from '../helpers/database.js'
import { bearer, issueTokens } from '../helpers/oauth.js'
import { client, createTeam, ROOMY_LIMITS, signUp, type Account, type Call } from '../helpers/teams.js'
import { listItem, otherTypeDocuments, SCHEMA_2025_12_11, seedDocument, weatherDocument } from './documents.js'
import { officialProblems } from './official-schema.js'

/**
 * GET /api/mcp/servers/:id/server.json: the bare 2025-12-11 document of a server, checked against
 * the registry's published schema: built from the catalogue for servers made here (named after
 * PUBLIC_URL's reversed host), the stored document with the catalogue's edits over it for
 * imported ones (an import exported again gives the same document back), who may read it, 404s.
 */

type Json = Record<string, unknown>

describe.each(DIALECTS)('server.json export on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  /** The same database, served under PUBLIC_URL https://platform.example.com. */
  let platform: FastifyInstance
  let call: Call
  let admin: Account
  let user: Account
  let seq = 0
  const unique = () => `${dialect}-${++seq}`

  const exportUrl = (idOrSlug: string) => `/api/mcp/servers/${idOrSlug}/server.json`

  /** The exported document; fails unless 200 with a bare JSON document the official schema accepts. */
  async function exported(idOrSlug: string, on: FastifyInstance = app, as: Account = admin): Promise<Json> {
    const response = await on.inject({ method: 'GET', url: exportUrl(idOrSlug), headers: { cookie: as.cookie } })
    expectDocument(response)
    return response.json()
  }

  function expectDocument(response: LightMyRequestResponse): void {
    expect(response.statusCode, response.body).toBe(200)
    expect(response.headers['content-type']).toBe('application/json; charset=utf-8')
    const document = response.json()
    expect(document).not.toHaveProperty('success')
    expect(document.$schema).toBe(SCHEMA_2025_12_11)
    expect(officialProblems(document)).toEqual([])
  }

  async function importDocuments(body: unknown): Promise<string[]> {
    const response = await call('POST', '/api/mcp/servers/import', admin, body)
    expect(response.statusCode, response.body).toBe(200)
    const { results } = response.json().data
    for (const result of results) expect(result.status, JSON.stringify(result)).not.toBe('invalid')
    return results.map((result: { server_id: string }) => result.server_id)
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect, { file: true })
    app = (await ctx.build({ limits: ROOMY_LIMITS })).app
    platform = (await ctx.build({ limits: ROOMY_LIMITS, env: { PUBLIC_URL: 'https://platform.example.com' } })).app
    call = client(app)
    admin = await signUp(app, 'export_admin')
    user = await signUp(app, 'export_user')
  })
  afterAll(() => ctx.close())

  describe('a server made here', () => {
    it('is built from the catalogue: named <namespace>/<slug>, packages (docker as oci), remotes, links, the latest version', async () => {
      const slug = `postgres-tools-${unique()}`
      const server = await createServer(call, admin, {
        name: 'PostgreSQL Tools', slug, description: 'Read-only SQL access to a PostgreSQL database.',
        repository_url: 'https://github.com/acme-labs/postgres-tools', website_url: 'https://acme-labs.example/postgres',
        icon_url: 'https://acme-labs.example/postgres.png',
        packages: [
          { registry_type: 'npm', identifier: '@acme-labs/postgres-tools', version: '1.4.0', runtime_args: ['--yes'], environment_variables: [{ name: 'DATABASE_URL', description: 'Connection string', required: true, secret: true }, { name: 'PGSSLMODE', default: 'prefer' }] },
          { registry_type: 'docker', identifier: 'ghcr.io/acme-labs/postgres-tools:1.4.0' },
        ],
        remotes: [{ type: 'streamable-http', url: 'https://mcp.acme-labs.example/postgres' }],
      })
      await addVersion(call, admin, server.id, { version: '1.3.0' })
      await addVersion(call, admin, server.id, { version: '1.4.0' })
      await addVersion(call, admin, server.id, { version: '2.0.0-rc.1' })

      const document = await exported(server.id)
      expect(document).toEqual({
        $schema: SCHEMA_2025_12_11,
        name: `localhost/${slug}`,
        title: 'PostgreSQL Tools',
        description: 'Read-only SQL access to a PostgreSQL database.',
        version: '1.4.0',
        websiteUrl: 'https://acme-labs.example/postgres',
        repository: { url: 'https://github.com/acme-labs/postgres-tools', source: 'github' },
        icons: [{ src: 'https://acme-labs.example/postgres.png' }],
        packages: [
          {
            registryType: 'npm', identifier: '@acme-labs/postgres-tools', version: '1.4.0', runtimeHint: 'npx', transport: { type: 'stdio' },
            runtimeArguments: [{ type: 'positional', value: '--yes' }],
            environmentVariables: [
              { name: 'DATABASE_URL', description: 'Connection string', isRequired: true, isSecret: true },
              { name: 'PGSSLMODE', isRequired: false, isSecret: false, default: 'prefer' },
            ],
          },
          { registryType: 'oci', identifier: 'ghcr.io/acme-labs/postgres-tools:1.4.0', transport: { type: 'stdio' } },
        ],
        remotes: [{ type: 'streamable-http', url: 'https://mcp.acme-labs.example/postgres' }],
      })
      // By slug alike.
      expect(await exported(slug)).toEqual(document)
    })

    it('the namespace is PUBLIC_URL\'s host reversed', async () => {
      const slug = `namespaced-${unique()}`
      await createServer(call, admin, { name: slug, slug })
      const document = await exported(slug, platform)
      expect(document.name).toBe(`com.example.platform/${slug}`)
      // The name's last part is the display name: no title.
      expect(document).not.toHaveProperty('title')
    })

    it('a description over 100 characters is shortened with an ellipsis; an empty one becomes the name; no version → 0.0.0', async () => {
      const long = `${'A server with a very long description. '.repeat(5)}The end.`
      const shortened = await createServer(call, admin, { name: `Long ${unique()}`, description: long })
      const document = await exported(shortened.id)
      // At most 100 characters, cut at the 99th (a space there is dropped) and marked.
      expect(Array.from(document.description as string).length).toBeGreaterThanOrEqual(90)
      expect(Array.from(document.description as string).length).toBeLessThanOrEqual(100)
      expect(document.description).toMatch(/…$/)
      expect(long.startsWith((document.description as string).slice(0, -1))).toBe(true)
      expect(document.version).toBe('0.0.0')

      const empty = await createServer(call, admin, { name: `Nameless Description ${unique()}` })
      expect((await exported(empty.id)).description).toBe(empty.name)
    })

    it('a server over http with a remote: its packages listen there (streamable-http)', async () => {
      const server = await createServer(call, admin, {
        name: `Over HTTP ${unique()}`, transport_type: 'http',
        packages: [{ registry_type: 'pypi', identifier: 'http-mcp', version: '0.2.0' }],
        remotes: [{ type: 'streamable-http', url: 'https://http.acme-labs.example/mcp' }],
      })
      const document = await exported(server.id)
      expect(document.packages).toEqual([{ registryType: 'pypi', identifier: 'http-mcp', version: '0.2.0', transport: { type: 'streamable-http', url: 'https://http.acme-labs.example/mcp' } }])
    })

    it('without a latest version (all deprecated), the newest version', async () => {
      const server = await createServer(call, admin, { name: `Deprecated ${unique()}` })
      await addVersion(call, admin, server.id, { version: '1.0.0', status: 'deprecated' })
      await addVersion(call, admin, server.id, { version: '1.1.0', status: 'deprecated' })
      expect((await exported(server.id)).version).toBe('1.1.0')
    })
  })

  describe('an imported server', () => {
    it('round trip: every imported document is exported as it was imported, and the official schema accepts it', async () => {
      const ns = `io.github.acme-${unique()}`
      const documents = [weatherDocument(ns), ...otherTypeDocuments(ns)]
      const ids = await importDocuments(documents)
      for (const [index, id] of ids.entries()) {
        expect(await exported(id), String(documents[index]!.name)).toEqual({ $schema: SCHEMA_2025_12_11, ...documents[index] })
        // The name is the registry's, whatever PUBLIC_URL says.
        expect((await exported(id, platform)).name).toBe(documents[index]!.name)
      }
    })

    it('an older shape is exported in the 2025-12-11 shape; the registry-managed _meta is not', async () => {
      const ns = `io.github.acme-${unique()}`
      const [id] = await importDocuments({ servers: [listItem(seedDocument(ns))] })
      const document = await exported(id!)
      expect(document).toMatchObject({
        name: `${ns}/legacy-search`, version: '0.9.0',
        packages: [{ registryType: 'npm', identifier: '@acme-labs/legacy-search', transport: { type: 'stdio' } }],
      })
      expect(document).not.toHaveProperty('version_detail')
      expect(document).not.toHaveProperty('_meta')
    })

    it('shows the catalogue\'s edits: description, display name, website and repository URL', async () => {
      const ns = `io.github.acme-${unique()}`
      const [id] = await importDocuments(weatherDocument(ns))
      const edited = await call('PUT', `/api/mcp/servers/global/${id}`, admin, {
        name: 'Weather Everywhere', description: 'Edited in the catalogue.', website_url: 'https://weather.example/home',
        repository_url: 'https://github.com/acme-labs/weather-fork',
      })
      expect(edited.statusCode, edited.body).toBe(200)
      expect(await exported(id!)).toEqual({
        $schema: SCHEMA_2025_12_11, ...weatherDocument(ns),
        title: 'Weather Everywhere', description: 'Edited in the catalogue.', websiteUrl: 'https://weather.example/home',
        repository: { url: 'https://github.com/acme-labs/weather-fork', source: 'github', id: '734112908', subfolder: 'servers/weather' },
      })
    })

    it('a version added here by hand, now the latest: built from the catalogue under the registry name', async () => {
      const ns = `io.github.acme-${unique()}`
      const [id] = await importDocuments(weatherDocument(ns, '1.2.0'))
      await addVersion(call, admin, id!, { version: '1.5.0' })
      const document = await exported(id!)
      expect(document).toMatchObject({ name: `${ns}/weather`, version: '1.5.0', title: 'Acme Weather' })
    })
  })

  describe('who may read it', () => {
    it('a session of any user, a bearer token with mcp:read; 403 for a token without it, 401 without credentials', async () => {
      const server = await createServer(call, admin, { name: `Readable ${unique()}` })
      expect((await exported(server.id, app, user)).name).toBe(`localhost/${server.slug}`)

      const tokens = await issueTokens(app, user.cookie, 'mcp:read')
      const withToken = await app.inject({ method: 'GET', url: exportUrl(server.id), headers: bearer(tokens.access_token) })
      expectDocument(withToken)
      expect(withToken.json().name).toBe(`localhost/${server.slug}`)

      const narrow = await issueTokens(app, user.cookie, 'account:read')
      const refused = await app.inject({ method: 'GET', url: exportUrl(server.id), headers: bearer(narrow.access_token) })
      expect(refused.statusCode, refused.body).toBe(403)
      expect(refused.json()).toMatchObject({ success: false, code: 'FORBIDDEN', details: { required_scope: 'mcp:read' } })

      const anonymous = await app.inject({ method: 'GET', url: exportUrl(server.id) })
      expect(anonymous.statusCode).toBe(401)
      expect(anonymous.json()).toMatchObject({ success: false, code: 'UNAUTHORIZED' })
    })

    it('404 in the envelope for an unknown server, and for a team server the caller cannot see', async () => {
      const unknown = await call('GET', exportUrl('no-such-server'), admin)
      expect(unknown.statusCode).toBe(404)
      expect(unknown.json()).toMatchObject({ success: false, code: 'NOT_FOUND' })

      const team = await createTeam(call, user, `Export team ${unique()}`)
      const teamServer = await insertTeamServer(app.services.database, team.id, 'Team Only Server', { description: 'Visible to the team.' })
      const outsider = await signUp(app, `export_outsider_${seq}`)
      const hidden = await call('GET', exportUrl(teamServer), outsider)
      expect(hidden.statusCode).toBe(404)
      expect(hidden.json().code).toBe('NOT_FOUND')
      // The same 404 as reading the server itself.
      expect((await call('GET', `/api/mcp/servers/${teamServer}`, outsider)).statusCode).toBe(404)
      // Its team sees it.
      expect((await exported(teamServer, app, user)).description).toBe('Visible to the team.')
    })

    it('the routes beside it still answer: the server itself, and GET of the import path is no server', async () => {
      const server = await createServer(call, admin, { name: `Beside ${unique()}` })
      const read = await call('GET', `/api/mcp/servers/${server.id}`, admin)
      expect(read.statusCode).toBe(200)
      expect(read.json().data.server.id).toBe(server.id)
      const importPath = await call('GET', '/api/mcp/servers/import', admin)
      expect(importPath.statusCode).toBe(404)
    })
  })
})
