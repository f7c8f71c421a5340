import { readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { sql } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { OFFICIAL_META } from '../../src/modules/registry/server-json.js'
import { UPSTREAM_URL_SETTING } from '../../src/modules/registry/sync.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { rawRows } from '../helpers/sql.js'
import { client, ROOMY_LIMITS, signUp, type Account, type Call } from '../helpers/teams.js'

/**
 * The MCP Registry's own seed file of May 2025 (a fixture, see test/fixtures/registry/README.md),
 * loaded whole as real catalogues receive it: every non-blank entry through the import API, then
 * the same entries through the sync from an upstream registry serving them page by page. Real
 * data holds what hand-written documents seldom do — placeholders in remote URLs, packages of
 * registry type `unknown`, empty or long descriptions, empty package versions — and none of it
 * may cost an entry. The entry whose remote URL holds a placeholder is read back from the
 * catalogue and from the export exactly as the file gives it.
 */

type Json = Record<string, unknown>

const SEED: unknown[] = JSON.parse(readFileSync(new URL('../fixtures/registry/registry-seed-2025-05-16.json', import.meta.url), 'utf8'))
const isEntry = (item: unknown): item is Json => typeof item === 'object' && item !== null && typeof (item as Json).name === 'string' && (item as Json).name !== ''
/** The real entries; the file's blank ones (every field empty) are no server at all. */
const ENTRIES = SEED.filter(isEntry)
const NAMES = ENTRIES.map((entry) => String(entry.name))

/** The entry whose remote URL carries a placeholder for the user's key. */
const PLACEHOLDER_URL = 'https://mcp.amap.com/sse?key=<YOUR_TOKEN>'
const placeholderEntry = ENTRIES.find((entry) => (entry.remotes as Json[] | undefined)?.some((remote) => remote.url === PLACEHOLDER_URL))

/** A seed remote (`transport_type`, `url`, …) in the 2025-12-11 spelling (`type`), its other members as they are. */
const remoteAsFormat = ({ transport_type: type, ...rest }: Json): Json => ({ type, ...rest })

/** Some 470 documents, each in its own transaction: seconds on an idle machine, more on a busy one. */
const IMPORT_TIMEOUT_MS = 120_000

interface ImportResult { index: number; name: string | null; status: string; server_id?: string }

/** An upstream registry on loopback serving `items` at /v0.1/servers, `limit` per page, the cursor being the last index served. */
async function startUpstream(items: Json[]): Promise<{ origin: string; port: number; pages: number; close(): Promise<void> }> {
  const state = { pages: 0 }
  const server: Server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://upstream.test')
    if (url.pathname !== '/v0.1/servers') {
      response.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"Not Found"}')
      return
    }
    state.pages += 1
    const start = Number(url.searchParams.get('cursor') ?? 0)
    const limit = Number(url.searchParams.get('limit') ?? 30)
    const page = items.slice(start, start + limit)
    const next = start + limit < items.length ? String(start + limit) : undefined
    response.writeHead(200, { 'content-type': 'application/json' })
    response.end(JSON.stringify({ servers: page, metadata: { count: page.length, ...(next === undefined ? {} : { nextCursor: next }) } }))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    origin: `http://127.0.0.1:${port}`,
    port,
    get pages() {
      return state.pages
    },
    async close() {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

describe('the fixture', () => {
  it('holds real entries and the placeholder-URL remote this file is about', () => {
    expect(ENTRIES.length).toBeGreaterThan(0)
    expect(new Set(NAMES).size).toBe(NAMES.length)
    expect(placeholderEntry).toBeDefined()
  })
})

describe.each(DIALECTS)('the MCP Registry seed file on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let admin: Account
  let upstream: Awaited<ReturnType<typeof startUpstream>>
  /** Registry name → catalogue server id, from the import. */
  const serverIds = new Map<string, string>()

  beforeAll(async () => {
    const meta = { [OFFICIAL_META]: { status: 'active', publishedAt: '2025-05-16T18:56:49Z', updatedAt: '2025-05-16T18:56:49Z', isLatest: true } }
    upstream = await startUpstream(ENTRIES.map((entry) => ({ server: entry, _meta: meta })))
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: ROOMY_LIMITS, env: { OUTBOUND_ALLOWED_HOSTS: `127.0.0.1:${upstream.port}` } })).app
    call = client(app)
    admin = await signUp(app, `seed_admin_${dialect}`)
  })
  afterAll(async () => {
    await ctx.close()
    await upstream.close()
  })

  it('the import API takes the file as published: every non-blank entry created, the blank ones reported invalid', async () => {
    const response = await call('POST', '/api/mcp/servers/import', admin, SEED)
    expect(response.statusCode, response.body.slice(0, 2000)).toBe(200)
    const { results, counts } = response.json().data as { results: ImportResult[]; counts: Record<string, number> }
    const refused = results.filter((result, index) => isEntry(SEED[index]) && result.status !== 'created')
    expect(refused, JSON.stringify(refused.slice(0, 5))).toEqual([])
    expect(counts).toEqual({ created: ENTRIES.length, updated: 0, unchanged: 0, invalid: SEED.length - ENTRIES.length })
    results.forEach((result, index) => {
      if (isEntry(SEED[index])) serverIds.set(String(result.name), result.server_id!)
      else expect(result).toMatchObject({ index, status: 'invalid' })
    })
    expect([...serverIds.keys()]).toEqual(NAMES)

    const [row] = await rawRows(app.services.database, sql`select count(*) from mcp_servers where source = 'registry'`)
    expect(Number(row![0])).toBe(ENTRIES.length)
  }, IMPORT_TIMEOUT_MS)

  it('the placeholder-URL remote reads back unchanged from the catalogue, its version and the export', async () => {
    const entry = placeholderEntry!
    const expected = (entry.remotes as Json[]).map(remoteAsFormat)
    expect(expected).toContainEqual(expect.objectContaining({ url: PLACEHOLDER_URL }))
    const id = serverIds.get(String(entry.name))!

    const server = await call('GET', `/api/mcp/servers/${id}`, admin)
    expect(server.statusCode, server.body).toBe(200)
    // Headers and variables: exactly what the file gives (here none), nothing added.
    expect(server.json().data.server.remotes).toEqual(expected)
    expect(server.json().data.server.registry_name).toBe(entry.name)
    const versions = await call('GET', `/api/mcp/servers/${id}/versions`, admin)
    expect(versions.json().data.versions.map((version: Json) => version.remotes)).toEqual([expected])

    const exported = await call('GET', `/api/mcp/servers/${id}/server.json`, admin)
    expect(exported.statusCode, exported.body).toBe(200)
    const document = exported.json()
    expect(document.remotes).toEqual(expected)
    // The package the catalogue cannot hold (an identifier npm would not take) is still exported as published.
    expect(document.packages.map((item: Json) => item.identifier)).toEqual((entry.packages as Json[]).map((item) => item.name))
  })

  it('every remote of the file is held by the catalogue and exported with the URL it was published with', async () => {
    const withRemotes = ENTRIES.filter((entry) => Array.isArray(entry.remotes) && entry.remotes.length > 0)
    expect(withRemotes.length).toBeGreaterThan(0)
    for (const entry of withRemotes) {
      const id = serverIds.get(String(entry.name))!
      const held = (await call('GET', `/api/mcp/servers/${id}`, admin)).json().data.server.remotes as Json[]
      const exported = (await call('GET', `/api/mcp/servers/${id}/server.json`, admin)).json().remotes as Json[]
      const urls = (entry.remotes as Json[]).map((remote) => remote.url)
      expect(held.map((remote) => remote.url), String(entry.name)).toEqual(urls)
      expect(exported, String(entry.name)).toEqual(held)
    }
  })

  it('the sync from an upstream registry serving the same entries accepts every one of them', async () => {
    const setting = await call('PUT', `/api/settings/${UPSTREAM_URL_SETTING}`, admin, { value: upstream.origin })
    expect(setting.statusCode, setting.body).toBe(200)
    const response = await call('POST', '/api/mcp/registry/sync', admin)
    expect(response.statusCode, response.body).toBe(200)
    const pages = Math.ceil(ENTRIES.length / 100)
    // Imported above already: the sync reads each the same way, so each is unchanged and none invalid.
    expect(response.json().data).toMatchObject({ counts: { created: 0, updated: 0, unchanged: ENTRIES.length, invalid: 0 }, pages })
    expect(upstream.pages).toBe(pages)
  }, IMPORT_TIMEOUT_MS)
})
