import { sql } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { createServer, type ServerBody, type VersionBody } from '../helpers/catalogue.js'
import { DIALECTS } from '../helpers/database.js'
import { bearer, issueTokens } from '../helpers/oauth.js'
import { rawRows } from '../helpers/sql.js'
import { client, ROOMY_LIMITS, signUp, type Account, type Call } from '../helpers/teams.js'
import { july2025Document, listItem, otherTypeDocuments, SCHEMA_2025_12_11, seedDocument, smallDocument, weatherDocument } from './documents.js'

/**
 * POST /api/mcp/servers/import: documents in the 2025-12-11 format and the two older shapes, one
 * document, an array or a registry list answer; each document checked and written in its own
 * transaction (invalid ones reported beside the others, nothing of them written), upsert by
 * registry name (created, updated, unchanged), the server's fields following its latest version
 * only, registry `deleted` as `yanked`, the 1 000-document limit, who may import, and concurrent
 * imports of one new document.
 */

interface ImportResult { index: number; name: string | null; status: string; server_id?: string; errors?: Array<{ field: string; message: string }> }
interface ImportAnswer { results: ImportResult[]; counts: { created: number; updated: number; unchanged: number; invalid: number } }

type Json = Record<string, unknown>

describe.each(DIALECTS)('server.json import on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  /** The first account: global_admin. */
  let admin: Account
  /** A global_user: may read the catalogue, not manage it. */
  let user: Account
  let seq = 0
  /** A namespace of its own for each test, so that tests never meet each other's servers. */
  const namespace = () => `io.github.acme-${dialect}-${++seq}`

  const post = (body: unknown, as: Account | undefined = admin) => call('POST', '/api/mcp/servers/import', as, body)

  async function importOk(body: unknown): Promise<ImportAnswer> {
    const response = await post(body)
    expect(response.statusCode, response.body).toBe(200)
    expect(response.json().success).toBe(true)
    return response.json().data
  }

  async function server(idOrSlug: string): Promise<ServerBody> {
    const response = await call('GET', `/api/mcp/servers/${idOrSlug}`, admin)
    expect(response.statusCode, response.body).toBe(200)
    return response.json().data.server
  }

  async function versions(serverId: string): Promise<VersionBody[]> {
    const response = await call('GET', `/api/mcp/servers/${serverId}/versions?limit=100`, admin)
    expect(response.statusCode, response.body).toBe(200)
    return response.json().data.versions
  }

  /** The stored documents of a server's versions, by version string. */
  async function storedDocuments(serverId: string): Promise<Record<string, Json>> {
    const rows = await rawRows(app.services.database, sql`select version, server_json from mcp_server_versions where server_id = ${serverId}`)
    return Object.fromEntries(rows.map(([version, stored]) => [version, typeof stored === 'string' ? JSON.parse(stored) : stored]))
  }

  /** Servers whose registry name starts with the namespace: id, registry name, updated_at (ms). */
  async function serverRows(ns: string): Promise<Array<{ id: string; registryName: string; updatedAt: number }>> {
    const rows = await rawRows(app.services.database, sql`select id, registry_name, updated_at from mcp_servers where registry_name like ${`${ns}/%`} order by registry_name`)
    return rows.map(([id, registryName, updatedAt]) => ({ id: String(id), registryName: String(registryName), updatedAt: new Date(updatedAt as string | number).getTime() }))
  }

  /** Versions of the namespace's servers: id, version, updated_at (ms). */
  async function versionRows(ns: string): Promise<Array<{ id: string; version: string; updatedAt: number }>> {
    const rows = await rawRows(app.services.database, sql`
      select v.id, v.version, v.updated_at from mcp_server_versions v join mcp_servers s on s.id = v.server_id
      where s.registry_name like ${`${ns}/%`} order by v.id`)
    return rows.map(([id, version, updatedAt]) => ({ id: String(id), version: String(version), updatedAt: new Date(updatedAt as string | number).getTime() }))
  }

  const countRows = async (table: 'mcp_servers' | 'mcp_server_versions'): Promise<number> => {
    const [row] = await rawRows(app.services.database, sql.raw(`select count(*) from ${table}`))
    return Number(row![0])
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: ROOMY_LIMITS })).app
    call = client(app)
    admin = await signUp(app, 'import_admin')
    user = await signUp(app, 'import_user')
  })
  afterAll(() => ctx.close())

  describe('documents of the 2025-12-11 format', () => {
    it('every package type the catalogue holds, remotes with headers, arguments with variables: created, mapped onto the catalogue', async () => {
      const ns = namespace()
      const documents = [weatherDocument(ns), ...otherTypeDocuments(ns)]
      const answer = await importOk(documents)
      expect(answer.counts).toEqual({ created: 6, updated: 0, unchanged: 0, invalid: 0 })
      expect(answer.results.map(({ index, name, status }) => ({ index, name, status }))).toEqual(
        documents.map((document, index) => ({ index, name: document.name, status: 'created' })),
      )
      for (const result of answer.results) expect(result.server_id).toEqual(expect.any(String))
      const [weatherId, notesId, dbId, dotnetId, bundleId, hostedId] = answer.results.map((result) => result.server_id!)

      const weather = await server(weatherId!)
      expect(weather).toMatchObject({
        name: 'Acme Weather', slug: 'acme-weather', description: 'Forecasts, alerts and current conditions for any city.',
        registry_name: `${ns}/weather`, source: 'registry', visibility: 'global', transport_type: 'stdio', status: 'active',
        repository_url: 'https://github.com/acme-labs/mcp-servers', website_url: 'https://acme-labs.example/weather',
        icon_url: 'https://acme-labs.example/weather.png', latest_version: '1.2.0', created_by: admin.id,
      })
      expect(weather.packages).toEqual([{
        registry_type: 'npm', identifier: '@acme-labs/weather-mcp', version: '1.2.0',
        runtime_args: ['--quiet', '-y'],
        environment_variables: [
          { name: 'ACME_API_KEY', description: 'Your Acme Labs API key', required: true, secret: true },
          { name: 'ACME_CACHE_DIR', description: 'Where forecasts are cached', required: false, secret: false, default: '/tmp/acme-weather' },
        ],
      }])
      // Both remotes as published: the headers with their variables, the URL template with its variables.
      expect(weather.remotes).toEqual(weatherDocument(ns).remotes)

      const [version] = await versions(weatherId!)
      expect(version).toMatchObject({ version: '1.2.0', status: 'active', is_latest: true, changelog: null, release_date: null, packages: weather.packages, remotes: weather.remotes })
      // Stored as published: headers, variables, inputs and the publisher's metadata kept.
      expect((await storedDocuments(weatherId!))['1.2.0']).toEqual(weatherDocument(ns))

      expect(await server(notesId!)).toMatchObject({
        name: 'notes', slug: 'notes', transport_type: 'stdio', registry_name: `${ns}/notes`,
        packages: [{
          registry_type: 'pypi', identifier: 'acme-notes-mcp', version: '0.4.1', runtime_args: ['--python', '3.12'],
          environment_variables: [{ name: 'NOTES_DB', description: 'Path of the notes database', required: true, secret: false }],
        }],
        remotes: [], repository_url: null, website_url: null, icon_url: null,
      })
      expect(await server(dbId!)).toMatchObject({
        name: 'Database Admin', slug: 'database-admin', transport_type: 'http',
        packages: [{ registry_type: 'oci', identifier: 'ghcr.io/acme-labs/db-admin:2.0.1' }],
      })
      // Only a pre-release: it is the latest.
      expect(await server(dotnetId!)).toMatchObject({
        name: 'dotnet-tools', latest_version: '1.0.0-beta.2',
        packages: [{ registry_type: 'nuget', identifier: 'AcmeLabs.Mcp.Tools', version: '1.0.0-beta.2' }],
      })
      expect(await server(bundleId!)).toMatchObject({
        transport_type: 'stdio',
        packages: [{ registry_type: 'mcpb', identifier: 'https://github.com/acme-labs/text-tools/releases/download/v1.0.0/text-tools.mcpb', version: '1.0.0' }],
      })
      expect(await server(hostedId!)).toMatchObject({ transport_type: 'sse', packages: [], remotes: [{ type: 'sse', url: 'https://hosted.acme-labs.example/sse' }] })
    })

    it('a document without $schema is stored with the 2025-12-11 one; the registry-managed _meta is not stored', async () => {
      const ns = namespace()
      const { $schema: _schema, ...document } = weatherDocument(ns)
      const meta = { ...(document._meta as Json), 'io.modelcontextprotocol.registry/official': { status: 'active', isLatest: true } }
      const answer = await importOk({ ...document, _meta: meta })
      expect(answer.counts.created).toBe(1)
      const stored = (await storedDocuments(answer.results[0]!.server_id!))['1.2.0']!
      expect(stored.$schema).toBe(SCHEMA_2025_12_11)
      expect(stored._meta).toEqual(weatherDocument(ns)._meta)
    })

    it('a title-less name takes the part after the slash; a taken slug gets the next free one, the hand-made server is left alone', async () => {
      const ns = namespace()
      const handMade = await createServer(call, admin, { name: `Kept ${ns}`, slug: `kept-${seq}`, description: 'Made by hand.' })
      const answer = await importOk({ ...smallDocument(`${ns}/kept-${seq}`), description: 'Imported.' })
      expect(answer.results[0]).toMatchObject({ status: 'created' })
      const imported = await server(answer.results[0]!.server_id!)
      expect(imported).toMatchObject({ name: `kept-${seq}`, slug: `kept-${seq}-2`, source: 'registry', registry_name: `${ns}/kept-${seq}` })
      expect(await server(handMade.id)).toEqual({ ...handMade, registry_name: null, source: 'manual' })
    })
  })

  describe('the older shapes and the list answer', () => {
    it('the May-2025 seed shape and the 2025-07 shape are up-converted, stored in the 2025-12-11 shape', async () => {
      const ns = namespace()
      const answer = await importOk([seedDocument(ns), july2025Document(ns)])
      expect(answer.counts).toEqual({ created: 2, updated: 0, unchanged: 0, invalid: 0 })
      const [seedId, julyId] = answer.results.map((result) => result.server_id!)

      expect(await server(seedId!)).toMatchObject({
        name: 'legacy-search', registry_name: `${ns}/legacy-search`, transport_type: 'stdio', latest_version: '0.9.0',
        repository_url: 'https://github.com/acme-labs/legacy-search',
        packages: [{
          registry_type: 'npm', identifier: '@acme-labs/legacy-search', version: '0.9.0',
          environment_variables: [{ name: 'SEARCH_KEY', description: 'Index key', required: true, secret: true }],
        }],
        remotes: [{ type: 'sse', url: 'https://legacy.acme-labs.example/sse', headers: [{ name: 'X-Key', isSecret: true }] }],
      })
      const [seedVersion] = await versions(seedId!)
      expect(seedVersion).toMatchObject({ version: '0.9.0', status: 'active', release_date: '2025-05-01T12:00:00.000Z' })
      const seedStored = (await storedDocuments(seedId!))['0.9.0']!
      expect(seedStored).toMatchObject({
        $schema: SCHEMA_2025_12_11, name: `${ns}/legacy-search`, version: '0.9.0',
        packages: [{
          registryType: 'npm', identifier: '@acme-labs/legacy-search', version: '0.9.0', transport: { type: 'stdio' },
          packageArguments: [{ type: 'positional', valueHint: 'profile', isRequired: true }],
          environmentVariables: [{ name: 'SEARCH_KEY', description: 'Index key', isRequired: true, isSecret: true }],
        }],
        remotes: [{ type: 'sse', url: 'https://legacy.acme-labs.example/sse', headers: [{ name: 'X-Key', isSecret: true }] }],
      })
      expect(seedStored).not.toHaveProperty('version_detail')

      // The 2025-07 document's own status.
      expect(await server(julyId!)).toMatchObject({ name: 'ledger', website_url: 'https://acme-labs.example/ledger', latest_version: null })
      expect((await versions(julyId!)).map((version) => [version.version, version.status, version.is_latest])).toEqual([['2.3.0', 'deprecated', false]])
      const julyStored = (await storedDocuments(julyId!))['2.3.0']!
      expect(julyStored).toMatchObject({
        $schema: SCHEMA_2025_12_11, websiteUrl: 'https://acme-labs.example/ledger',
        packages: [{
          registryType: 'pypi', registryBaseUrl: 'https://pypi.org', runtimeHint: 'uvx', transport: { type: 'stdio' },
          packageArguments: [{ type: 'named', name: '--book', valueHint: 'book', isRepeated: true }],
          environmentVariables: [{ name: 'LEDGER_TOKEN', isRequired: true, isSecret: true }],
        }],
      })
      expect(julyStored).not.toHaveProperty('status')
      expect(julyStored).not.toHaveProperty('website_url')
    })

    it('a registry list answer: each item with its _meta status (deleted → yanked) and publishedAt as the release date', async () => {
      const ns = namespace()
      const body = {
        servers: [
          listItem(smallDocument(`${ns}/alpha`, '1.0.0'), { publishedAt: '2026-08-01T09:30:00Z' }),
          listItem(smallDocument(`${ns}/beta`, '2.0.0'), { status: 'deprecated' }),
          listItem(smallDocument(`${ns}/gamma`, '3.0.0'), { status: 'deleted' }),
        ],
        metadata: { count: 3, nextCursor: 'opaque' },
      }
      const answer = await importOk(body)
      expect(answer.counts).toEqual({ created: 3, updated: 0, unchanged: 0, invalid: 0 })
      const [alpha, beta, gamma] = answer.results.map((result) => result.server_id!)
      expect(await versions(alpha!)).toMatchObject([{ version: '1.0.0', status: 'active', is_latest: true, release_date: '2026-08-01T09:30:00.000Z' }])
      expect(await versions(beta!)).toMatchObject([{ version: '2.0.0', status: 'deprecated', is_latest: false, release_date: '2026-09-01T10:00:00.000Z' }])
      expect(await versions(gamma!)).toMatchObject([{ version: '3.0.0', status: 'yanked', is_latest: false }])
      expect((await server(gamma!)).latest_version).toBeNull()
    })

    it('a single document, an array of one and a list answer of one import the same', async () => {
      const ns = namespace()
      const document = smallDocument(`${ns}/same`)
      expect((await importOk(document)).results).toMatchObject([{ index: 0, name: `${ns}/same`, status: 'created' }])
      expect((await importOk([document])).results).toMatchObject([{ index: 0, status: 'unchanged' }])
      expect((await importOk({ servers: [listItem(document)], metadata: { count: 1 } })).results).toMatchObject([{ index: 0, status: 'unchanged' }])
      expect(await serverRows(ns)).toHaveLength(1)
    })
  })

  describe('invalid documents', () => {
    it('are reported with the fields at fault, in request order, beside the valid ones, which are imported; nothing of them is written', async () => {
      const ns = namespace()
      const serversBefore = await countRows('mcp_servers')
      const versionsBefore = await countRows('mcp_server_versions')
      const valid = smallDocument(`${ns}/valid-one`)
      const body = [
        { name: `${ns}/no-description`, version: '1.0.0' },
        valid,
        { ...smallDocument(`${ns}/bad-transport`), packages: [{ registryType: 'npm', identifier: 'bad-transport', version: '1.0.0', transport: { type: 'streamable-http' } }] },
        { ...smallDocument('no-slash-in-name') },
        { ...smallDocument(`${ns}/no-registry-type`), packages: [{ registryType: '', identifier: 'acme-crate', version: '1.0.0', transport: { type: 'stdio' } }] },
        { ...smallDocument(`${ns}/calendar`), version: '2026.10' },
        { ...smallDocument(`${ns}/no-identifier`), packages: [{ registryType: 'npm', version: '1.0.0', transport: { type: 'stdio' } }] },
        { ...smallDocument(`${ns}/latest`), packages: [{ registryType: 'npm', identifier: 'latest-mcp', version: 'latest', transport: { type: 'stdio' } }] },
        { ...smallDocument(`${ns}/too-long`), description: 'x'.repeat(101) },
        'not a document',
        smallDocument(`${ns}/valid-two`, '2.0.0'),
      ]
      const answer = await importOk(body)
      expect(answer.counts).toEqual({ created: 2, updated: 0, unchanged: 0, invalid: 9 })
      expect(answer.results.map((result) => result.status)).toEqual([
        'invalid', 'created', 'invalid', 'invalid', 'invalid', 'invalid', 'invalid', 'invalid', 'invalid', 'invalid', 'created',
      ])
      expect(answer.results.map((result) => result.index)).toEqual(body.map((_, index) => index))
      const fields = (index: number) => answer.results[index]!.errors!.map((error) => error.field)
      expect(fields(0)).toContain('description')
      expect(answer.results[0]).toMatchObject({ name: `${ns}/no-description` })
      expect(answer.results[0]).not.toHaveProperty('server_id')
      expect(fields(2)).toContain('packages[0].transport.url')
      expect(fields(3)).toContain('name')
      // The official schema refuses these two as well: an empty registry type, a package without identifier.
      expect(answer.results[4]!.errors).toEqual([{ field: 'packages[0].registryType', message: 'must not be empty' }])
      expect(fields(5)).toEqual(['version'])
      expect(answer.results[5]!.errors![0]!.message).toMatch(/semantic version/)
      expect(answer.results[6]!.errors).toEqual([{ field: 'packages[0].identifier', message: 'is required' }])
      expect(fields(7)).toEqual(['packages[0].version'])
      expect(fields(8)).toEqual(['description'])
      expect(answer.results[9]).toMatchObject({ name: null, errors: [{ field: '(document)' }] })
      for (const result of answer.results.filter((each) => each.status === 'invalid')) {
        for (const error of result.errors!) expect(error.message).toEqual(expect.stringMatching(/\S/))
        expect(result).not.toHaveProperty('warnings')
      }

      // Only the two valid documents are in the database: one server and one version each.
      expect((await serverRows(ns)).map((row) => row.registryName)).toEqual([`${ns}/valid-one`, `${ns}/valid-two`])
      expect(await countRows('mcp_servers')).toBe(serversBefore + 2)
      expect(await countRows('mcp_server_versions')).toBe(versionsBefore + 2)
    })

    it('a body that is neither a document, an array nor a list answer: 400, nothing written', async () => {
      const before = await countRows('mcp_servers')
      for (const body of ['"a string"', '42', 'null', 'true']) {
        const response = await app.inject({ method: 'POST', url: '/api/mcp/servers/import', headers: { cookie: admin.cookie, 'content-type': 'application/json' }, payload: body })
        expect(response.statusCode, `${body}: ${response.body}`).toBe(400)
        expect(response.json()).toMatchObject({ success: false, code: 'VALIDATION_ERROR' })
      }
      const notJson = await app.inject({ method: 'POST', url: '/api/mcp/servers/import', headers: { cookie: admin.cookie, 'content-type': 'application/json' }, payload: '{"name":' })
      expect(notJson.statusCode).toBe(400)
      expect(notJson.json().code).toBe('INVALID_JSON')
      expect(await countRows('mcp_servers')).toBe(before)
    })

    it('array items that are not objects are reported invalid one by one', async () => {
      const answer = await importOk([1, [], null])
      expect(answer.counts).toEqual({ created: 0, updated: 0, unchanged: 0, invalid: 3 })
      expect(answer.results).toEqual([0, 1, 2].map((index) => ({ index, name: null, status: 'invalid', errors: [{ field: '(document)', message: expect.any(String) }] })))
    })

    it('an empty array imports nothing and says so', async () => {
      expect(await importOk([])).toEqual({ results: [], counts: { created: 0, updated: 0, unchanged: 0, invalid: 0 } })
    })
  })

  describe('packages and remotes the catalogue cannot run', () => {
    const cargo = { registryType: 'cargo', identifier: 'acme-crate', version: '1.0.0', transport: { type: 'stdio' } }
    const upperNpm = { registryType: 'npm', identifier: 'Not An NPM Name', version: '1.0.0', transport: { type: 'stdio' } }
    const spacedHeader = { type: 'sse', url: 'https://mcp.acme-labs.example/sse', headers: [{ name: 'X Key', isSecret: true }] }
    const crateDocument = (ns: string): Json => ({
      ...smallDocument(`${ns}/crate`),
      packages: [cargo, ...(smallDocument(`${ns}/crate`).packages as Json[]), upperNpm],
      remotes: [spacedHeader, { type: 'streamable-http', url: 'https://mcp.acme-labs.example/mcp' }],
    })
    const warningsOfCrate = [
      { field: 'packages[0].registryType', message: 'registry type "cargo" is not one this catalogue holds (npm, pypi, oci, nuget, mcpb)' },
      { field: 'packages[2].identifier', message: expect.stringMatching(/^does not have the expected form \(An npm package name/) },
      { field: 'remotes[0].headers[0].name', message: expect.stringMatching(/^does not have the expected form/) },
    ]

    it('a 2025-12-11 document with a cargo package, an identifier npm refuses and a header that is no HTTP token: created, those parts stored and exported but not catalogued, and named in warnings', async () => {
      const ns = namespace()
      const document = crateDocument(ns)
      const answer = await importOk([document, smallDocument(`${ns}/plain`)])
      expect(answer.counts).toEqual({ created: 2, updated: 0, unchanged: 0, invalid: 0 })
      expect(answer.results[0]).toEqual({ index: 0, name: `${ns}/crate`, status: 'created', server_id: expect.any(String), warnings: warningsOfCrate })
      expect(answer.results[1]).not.toHaveProperty('warnings')
      const id = answer.results[0]!.server_id!

      // The catalogue lists only what it can run, so installations never offer the others.
      const held = await server(id)
      expect(held.packages).toEqual([{ registry_type: 'npm', identifier: 'small-mcp-server', version: '1.0.0' }])
      expect(held.remotes).toEqual([{ type: 'streamable-http', url: 'https://mcp.acme-labs.example/mcp' }])
      const [version] = await versions(id)
      expect(version).toMatchObject({ packages: held.packages, remotes: held.remotes })
      expect((await storedDocuments(id))['1.0.0']).toMatchObject({ packages: document.packages, remotes: document.remotes })

      const exported = await call('GET', `/api/mcp/servers/${id}/server.json`, admin)
      expect(exported.statusCode, exported.body).toBe(200)
      expect(exported.json()).toMatchObject({ name: `${ns}/crate`, packages: document.packages, remotes: document.remotes })

      // The export imports again (unchanged: the same document), and says the same.
      const again = await importOk(exported.json())
      expect(again.results).toEqual([{ index: 0, name: `${ns}/crate`, status: 'unchanged', server_id: id, warnings: warningsOfCrate }])
    })

    it('a version with such packages updates an existing server: its catalogued packages follow, the warnings say which were left out', async () => {
      const ns = namespace()
      const first = await importOk(smallDocument(`${ns}/crate`))
      const id = first.results[0]!.server_id!
      const answer = await importOk({ ...crateDocument(ns), version: '1.1.0' })
      expect(answer.results).toEqual([{ index: 0, name: `${ns}/crate`, status: 'updated', server_id: id, warnings: warningsOfCrate }])
      expect((await server(id)).packages).toEqual([{ registry_type: 'npm', identifier: 'small-mcp-server', version: '1.0.0' }])
      expect(Object.keys(await storedDocuments(id)).sort()).toEqual(['1.0.0', '1.1.0'])
    })
  })

  describe('upsert by registry name', () => {
    it('the same body twice: everything unchanged, no new rows, updated_at untouched', async () => {
      const ns = namespace()
      const body = [weatherDocument(ns), ...otherTypeDocuments(ns), seedDocument(ns), july2025Document(ns)]
      const first = await importOk(body)
      expect(first.counts).toEqual({ created: 8, updated: 0, unchanged: 0, invalid: 0 })
      const [servers, versionsBefore] = [await serverRows(ns), await versionRows(ns)]
      const total = [await countRows('mcp_servers'), await countRows('mcp_server_versions')]

      const second = await importOk(body)
      expect(second.counts).toEqual({ created: 0, updated: 0, unchanged: 8, invalid: 0 })
      expect(second.results.map((result) => result.server_id)).toEqual(first.results.map((result) => result.server_id))
      expect(await serverRows(ns)).toEqual(servers)
      expect(await versionRows(ns)).toEqual(versionsBefore)
      expect([await countRows('mcp_servers'), await countRows('mcp_server_versions')]).toEqual(total)

      // Member order does not make a document different.
      const reordered = Object.fromEntries(Object.entries(weatherDocument(ns)).reverse())
      expect((await importOk(reordered)).results[0]).toMatchObject({ status: 'unchanged' })
    })

    it('a new version: updated, the version added, the latest mark and the server fields move to it', async () => {
      const ns = namespace()
      const [created] = (await importOk(weatherDocument(ns, '1.2.0'))).results
      const { slug } = await server(created!.server_id!)
      const next = { ...weatherDocument(ns, '1.3.0'), description: 'Now with pollen counts.', title: 'Acme Weather Plus' }
      const answer = await importOk(next)
      expect(answer.results).toEqual([{ index: 0, name: `${ns}/weather`, status: 'updated', server_id: created!.server_id }])
      expect(answer.counts).toEqual({ created: 0, updated: 1, unchanged: 0, invalid: 0 })
      expect((await versions(created!.server_id!)).map((version) => [version.version, version.is_latest])).toEqual([['1.3.0', true], ['1.2.0', false]])
      expect(await server(created!.server_id!)).toMatchObject({
        name: 'Acme Weather Plus', slug, description: 'Now with pollen counts.', latest_version: '1.3.0',
        packages: [{ identifier: '@acme-labs/weather-mcp', version: '1.3.0' }],
      })
      expect(await serverRows(ns)).toHaveLength(1)
    })

    it('an older version imported after: updated, the version added, the server fields and the latest mark untouched', async () => {
      const ns = namespace()
      const [created] = (await importOk(weatherDocument(ns, '2.0.0'))).results
      const before = await server(created!.server_id!)
      const older = { ...weatherDocument(ns, '1.9.0'), description: 'An older description.', title: 'Old Title', websiteUrl: 'https://old.example/weather' }
      expect((await importOk(older)).results).toMatchObject([{ status: 'updated', server_id: created!.server_id }])
      expect(await server(created!.server_id!)).toEqual(before)
      expect((await versions(created!.server_id!)).map((version) => [version.version, version.is_latest])).toEqual([['2.0.0', true], ['1.9.0', false]])
      expect((await storedDocuments(created!.server_id!))['1.9.0']).toMatchObject({ description: 'An older description.', version: '1.9.0' })
    })

    it('the same version with a changed document: updated, the stored document, packages and remotes refreshed', async () => {
      const ns = namespace()
      const [created] = (await importOk(smallDocument(`${ns}/refresh`, '1.0.0'))).results
      const changed = {
        ...smallDocument(`${ns}/refresh`, '1.0.0'),
        packages: [{ registryType: 'pypi', identifier: 'refreshed-mcp', version: '1.0.0', transport: { type: 'stdio' } }],
        remotes: [{ type: 'streamable-http', url: 'https://refresh.example/mcp' }],
      }
      expect((await importOk(changed)).results).toMatchObject([{ status: 'updated' }])
      const [version] = await versions(created!.server_id!)
      expect(version).toMatchObject({ packages: [{ registry_type: 'pypi', identifier: 'refreshed-mcp' }], remotes: [{ type: 'streamable-http', url: 'https://refresh.example/mcp' }] })
      expect(await server(created!.server_id!)).toMatchObject({ packages: [{ identifier: 'refreshed-mcp' }], transport_type: 'stdio' })
      expect((await storedDocuments(created!.server_id!))['1.0.0']).toMatchObject({ packages: [{ registryType: 'pypi' }] })
      expect(await versionRows(ns)).toHaveLength(1)
    })

    it('registry status deleted: the version is yanked, the latest mark falls back; it stays yanked when imported active again', async () => {
      const ns = namespace()
      const [created] = (await importOk([smallDocument(`${ns}/yank`, '1.0.0'), smallDocument(`${ns}/yank`, '1.1.0')])).results
      const serverId = created!.server_id!
      expect((await server(serverId)).latest_version).toBe('1.1.0')

      const deleted = await importOk({ servers: [listItem(smallDocument(`${ns}/yank`, '1.1.0'), { status: 'deleted' })] })
      expect(deleted.results).toMatchObject([{ status: 'updated', server_id: serverId }])
      expect((await versions(serverId)).map((version) => [version.version, version.status, version.is_latest])).toEqual([['1.1.0', 'yanked', false], ['1.0.0', 'active', true]])
      expect((await server(serverId)).latest_version).toBe('1.0.0')

      // Yanking is final here: the same document, active again, changes nothing.
      const again = await importOk(smallDocument(`${ns}/yank`, '1.1.0'))
      expect(again.results).toMatchObject([{ status: 'unchanged' }])
      expect((await versions(serverId)).map((version) => version.status)).toEqual(['yanked', 'active'])
    })

    it('a version of equal precedence (build metadata differs) is the same version', async () => {
      const ns = namespace()
      const [created] = (await importOk(smallDocument(`${ns}/build`, '1.0.0+build.1'))).results
      expect((await importOk(smallDocument(`${ns}/build`, '1.0.0+build.2'))).results).toMatchObject([{ status: 'updated' }])
      expect((await versions(created!.server_id!)).map((version) => version.version)).toEqual(['1.0.0+build.1'])
    })

    it('a catalogue edit survives importing the same document again', async () => {
      const ns = namespace()
      const [created] = (await importOk(weatherDocument(ns))).results
      const edited = await call('PUT', `/api/mcp/servers/global/${created!.server_id}`, admin, { description: 'Edited here.', featured: true })
      expect(edited.statusCode, edited.body).toBe(200)
      expect((await importOk(weatherDocument(ns))).results).toMatchObject([{ status: 'unchanged' }])
      expect(await server(created!.server_id!)).toMatchObject({ description: 'Edited here.', featured: true })
    })
  })

  describe('limits and concurrency', () => {
    it('1 001 documents: 400 VALIDATION_ERROR, as an array or as a list answer, and nothing is written', async () => {
      const ns = namespace()
      const documents = Array.from({ length: 1001 }, (_, index) => smallDocument(`${ns}/many-${index}`))
      for (const body of [documents, { servers: documents.map((document) => listItem(document)), metadata: { count: 1001 } }]) {
        const response = await post(body)
        expect(response.statusCode, response.body.slice(0, 500)).toBe(400)
        expect(response.json()).toMatchObject({ success: false, code: 'VALIDATION_ERROR' })
        expect(response.json().details).toEqual([{ field: 'body', message: 'holds 1001 documents; at most 1000 may be imported at once', in: 'body' }])
      }
      expect(await serverRows(ns)).toEqual([])
    })

    it('1 000 small documents in one request: all created', { timeout: 180_000 }, async () => {
      const ns = namespace()
      const documents = Array.from({ length: 1000 }, (_, index) => smallDocument(`${ns}/bulk-${String(index).padStart(4, '0')}`))
      const started = performance.now()
      const answer = await importOk(documents)
      const elapsed = performance.now() - started
      console.log(`[registry import] 1000 documents on ${dialect}: ${Math.round(elapsed)} ms`)
      expect(answer.counts).toEqual({ created: 1000, updated: 0, unchanged: 0, invalid: 0 })
      expect(new Set(answer.results.map((result) => result.server_id)).size).toBe(1000)
      expect(await serverRows(ns)).toHaveLength(1000)
      expect(await versionRows(ns)).toHaveLength(1000)
    })

    it('concurrent imports of the same new document create exactly one server', async () => {
      const ns = namespace()
      const document = weatherDocument(ns)
      const responses = await Promise.all(Array.from({ length: 5 }, () => post(document)))
      for (const response of responses) expect(response.statusCode, response.body).toBe(200)
      const statuses = responses.map((response) => response.json().data.results[0].status).sort()
      expect(statuses).toEqual(['created', 'unchanged', 'unchanged', 'unchanged', 'unchanged'])
      const rows = await serverRows(ns)
      expect(rows).toHaveLength(1)
      expect(new Set(responses.map((response) => response.json().data.results[0].server_id))).toEqual(new Set([rows[0]!.id]))
      expect(await versionRows(ns)).toHaveLength(1)
    })
  })

  describe('who may import', () => {
    it('a global_user: 403 naming mcp.servers.manage; anonymous: 401; a bearer token: 401; nothing written', async () => {
      const ns = namespace()
      const document = smallDocument(`${ns}/refused`)
      const asUser = await post(document, user)
      expect(asUser.statusCode, asUser.body).toBe(403)
      expect(asUser.json()).toMatchObject({ code: 'FORBIDDEN', details: { required_permission: 'mcp.servers.manage' } })
      const anonymous = await call('POST', '/api/mcp/servers/import', undefined, document)
      expect(anonymous.statusCode).toBe(401)
      expect(anonymous.json().code).toBe('UNAUTHORIZED')
      const tokens = await issueTokens(app, admin.cookie, 'mcp:read')
      const withToken = await app.inject({ method: 'POST', url: '/api/mcp/servers/import', headers: bearer(tokens.access_token), payload: document })
      expect(withToken.statusCode, withToken.body).toBe(401)
      expect(await serverRows(ns)).toEqual([])
    })

    it('records one audit event per request, with the counts and the importing user', async () => {
      const ns = namespace()
      await importOk([smallDocument(`${ns}/audited`), { name: `${ns}/broken` }])
      const rows = await rawRows(app.services.database, sql`select actor_id, details from audit_events where type = 'catalogue.servers_imported' order by created_at desc, id desc limit 1`)
      const [actorId, details] = rows[0]!
      expect(actorId).toBe(admin.id)
      expect(typeof details === 'string' ? JSON.parse(details) : details).toEqual({ documents: 2, counts: { created: 1, updated: 0, unchanged: 0, invalid: 1 } })
    })
  })

  it('the server view of a hand-made server: registry_name null, source manual', async () => {
    const made = await createServer(call, admin, { name: `Manual ${dialect}` })
    expect(made).toMatchObject({ registry_name: null, source: 'manual' })
  })
})
