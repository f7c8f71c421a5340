import { Ajv } from 'ajv'
import addFormats from 'ajv-formats'
import { asc, eq } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import semver from 'semver'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { caseKey, normalizeTag } from '../../src/db/repositories/server-filters.js'
import { packageProblems } from '../../src/formats/package-rules.js'
import { seedCatalogue, type SeedCatalogueResult } from '../../src/cli/seed/catalogue.js'
import { SEED_CATEGORIES } from '../../src/cli/seed/vocabulary.js'
import type { Database } from '../../src/db/types.js'
import { slugify } from '../../src/lib/slug.js'
import { CreateServerBody } from '../../src/modules/catalogue/schemas.js'
import { parseVersion } from '../../src/modules/catalogue/semver-key.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import type { CategoryBody, ServerBody, VersionBody } from '../helpers/catalogue.js'
import { DIALECTS } from '../helpers/database.js'
import { client, ROOMY_LIMITS, signUp, type Account, type Call } from '../helpers/teams.js'

/** Seeding and paging through a few hundred servers on a loaded machine. */
const TIMEOUT = 120_000
const SEEDED = 300
const NOW = new Date()
const TWO_YEARS_MS = 2 * 365 * 24 * 3600 * 1000

interface Page { servers: ServerBody[]; pagination: { total: number; limit: number; offset: number; has_more: boolean } }

/** The API's own request rules for a server, compiled like the app compiles them (formats, discriminator). */
const ajv = addFormats.default(new Ajv({ allErrors: true, strict: false, strictNumbers: true, discriminator: true }))
const validCreateBody = ajv.compile(CreateServerBody)

/** A server as it could have been created through POST /api/mcp/servers/global. */
function asCreateBody(server: ServerBody): Record<string, unknown> {
  const body: Record<string, unknown> = {
    name: server.name, slug: server.slug, description: server.description, long_description: server.long_description,
    category_id: server.category_id, tags: server.tags, language: server.language, runtime: server.runtime,
    transport_type: server.transport_type, status: server.status, featured: server.featured,
    repository_url: server.repository_url, website_url: server.website_url, icon_url: server.icon_url,
    author_name: server.author_name, organization: server.organization, license: server.license,
    packages: server.packages, remotes: server.remotes,
  }
  return body
}

/** The latest version by the rule, with the `semver` library as the oracle: highest active release, else highest active pre-release. */
function expectedLatest(versions: Array<{ version: string; status: string }>): string | null {
  const active = versions.filter((v) => v.status === 'active')
  const releases = active.filter((v) => semver.prerelease(v.version) === null)
  const pool = releases.length > 0 ? releases : active
  return [...pool].sort((a, b) => semver.rcompare(a.version, b.version))[0]?.version ?? null
}

/** Words as the search defines them: runs of letters and digits, lowercased. */
const wordsOf = (text: string) => text.normalize('NFKC').toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []

describe.each(DIALECTS)('seeding the catalogue on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let admin: Account
  let database: Database
  let first: SeedCatalogueResult
  let servers: ServerBody[]

  /** Every server through the API, page by page (each page passes the response serializer). */
  async function allServers(): Promise<ServerBody[]> {
    const out: ServerBody[] = []
    for (let offset = 0; ; offset += 100) {
      const response = await call('GET', `/api/mcp/servers?limit=100&offset=${offset}`, admin)
      expect(response.statusCode, response.body).toBe(200)
      const page: Page = response.json().data
      out.push(...page.servers)
      if (!page.pagination.has_more) return out
    }
  }

  async function total(url: string): Promise<number> {
    const response = await call('GET', url, admin)
    expect(response.statusCode, response.body).toBe(200)
    return (response.json().data as Page).pagination.total
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: ROOMY_LIMITS })).app
    call = client(app)
    admin = await signUp(app, 'seed_admin')
    database = app.services.database
    first = await seedCatalogue(database, { servers: SEEDED, seed: 42, now: NOW })
    servers = await allServers()
  }, TIMEOUT)
  afterAll(() => ctx?.close())

  it('adds the servers asked for, with their categories, tags and versions', async () => {
    expect(first).toMatchObject({ servers: SEEDED, skipped: 0, categoriesCreated: 24, categoriesUsed: 24 })
    expect(first.tags).toBeGreaterThanOrEqual(SEEDED)
    expect(first.versions).toBeGreaterThan(0)
    expect(servers).toHaveLength(SEEDED)
    expect(await total('/api/mcp/servers?limit=1')).toBe(SEEDED)

    const categories: CategoryBody[] = (await call('GET', '/api/mcp/categories', admin)).json().data.categories
    expect(categories.map((c) => c.name)).toEqual(SEED_CATEGORIES.slice(0, 24).map((c) => c.name))
    const categorized = servers.filter((s) => s.category_id !== null).length
    expect(categories.reduce((sum, c) => sum + c.server_count, 0)).toBe(categorized)
    expect(categorized).toBeGreaterThan(SEEDED * 0.8)
  })

  it('writes every server by the rules of the API', async () => {
    const ids = new Set(servers.map((s) => s.id))
    expect(ids.size).toBe(SEEDED)
    for (const server of servers) {
      expect(validCreateBody(asCreateBody(server)), `${server.slug}: ${JSON.stringify(validCreateBody.errors)}`).toBe(true)
      // What a satellite may run: the entry rules the API applies to the same body.
      expect(server.packages.flatMap((item, index) => packageProblems(item, `packages[${index}]`, 'global')), server.slug).toEqual([])
      expect(server).toMatchObject({ visibility: 'global', owner_team_id: null, created_by: null })
      expect(server.name).toBe(server.name.trim())
      expect(server.slug.startsWith(slugify(server.name, 94, 'server'))).toBe(true)
      expect(server.tags.length).toBeGreaterThanOrEqual(1)
      expect(server.tags.length).toBeLessThanOrEqual(6)
      expect(server.tags.map(normalizeTag)).toEqual(server.tags)
      expect(new Set(server.tags).size).toBe(server.tags.length)
      const created = Date.parse(server.created_at)
      const updated = Date.parse(server.updated_at)
      expect(updated).toBeGreaterThanOrEqual(created)
      expect(created).toBeGreaterThanOrEqual(NOW.getTime() - TWO_YEARS_MS)
      expect(updated).toBeLessThanOrEqual(NOW.getTime())
      if (server.repository_url !== null) expect(server.repository_url).toMatch(/^https:\/\/github\.com\/[a-z0-9-]+\/[a-z0-9-]+$/)
      for (const item of server.packages) {
        for (const variable of (item.environment_variables ?? []) as Array<Record<string, unknown>>) {
          expect(variable).toEqual(expect.objectContaining({ description: expect.any(String), required: expect.any(Boolean), secret: expect.any(Boolean) }))
        }
      }
    }
    // Varied: names differ, and the vocabularies show through.
    expect(new Set(servers.map((s) => s.name.toLowerCase())).size).toBeGreaterThan(SEEDED * 0.95)
    expect(new Set(servers.map((s) => s.language)).size).toBeGreaterThanOrEqual(4)
    expect(new Set(servers.map((s) => s.transport_type)).size).toBe(3)
    expect(new Set(servers.flatMap((s) => s.packages.map((p) => p.registry_type))).size).toBeGreaterThanOrEqual(3)
    expect(servers.filter((s) => s.status === 'active').length).toBeGreaterThan(SEEDED * 0.75)

    // What the API does not show: the name sort key, the case keys of the filters, the tag table.
    const { t } = database
    const rows = await database.db.select({ id: t.mcpServers.id, name: t.mcpServers.name, sortName: t.mcpServers.sortName, tags: t.mcpServers.tags, language: t.mcpServers.language, languageKey: t.mcpServers.languageKey, runtime: t.mcpServers.runtime, runtimeKey: t.mcpServers.runtimeKey }).from(t.mcpServers)
    const tagRows = await database.db.select().from(t.mcpServerTags)
    const mirrored = new Map<string, string[]>()
    for (const row of tagRows) mirrored.set(row.serverId, [...(mirrored.get(row.serverId) ?? []), row.tag])
    for (const row of rows) {
      expect(row.sortName).toBe(row.name.toLowerCase())
      expect(row.languageKey).toBe(row.language === null ? null : caseKey(row.language))
      expect(row.runtimeKey).toBe(row.runtime === null ? null : caseKey(row.runtime))
      expect([...(mirrored.get(row.id) ?? [])].sort()).toEqual([...row.tags].sort())
    }
  })

  it('gives every server a unique slug of the API pattern', async () => {
    const slugs = servers.map((s) => s.slug)
    expect(new Set(slugs).size).toBe(slugs.length)
    for (const slug of slugs) {
      expect(slug).toMatch(/^[a-z0-9]+(-[a-z0-9]+)*$/)
      expect(slug.length).toBeLessThanOrEqual(100)
      expect(['search', 'global', 'import']).not.toContain(slug)
    }
    // Reachable by slug.
    const sample = servers[SEEDED >> 1]!
    const response = await call('GET', `/api/mcp/servers/${sample.slug}`, admin)
    expect(response.statusCode).toBe(200)
    expect(response.json().data.server.id).toBe(sample.id)
  })

  it('is found by the tag filter as often as the tag table says', async () => {
    const { t } = database
    const tagRows = await database.db.select({ tag: t.mcpServerTags.tag }).from(t.mcpServerTags)
    const counts = new Map<string, number>()
    for (const { tag } of tagRows) counts.set(tag, (counts.get(tag) ?? 0) + 1)
    const [commonest] = [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    const [tag, count] = commonest!
    expect(count).toBeGreaterThan(1)
    expect(await total(`/api/mcp/servers?limit=1&tag=${encodeURIComponent(tag)}`)).toBe(count)
    expect(count).toBe(servers.filter((s) => s.tags.includes(tag)).length)
    // Upper case in the filter changes nothing.
    expect(await total(`/api/mcp/servers?limit=1&tag=${encodeURIComponent(tag.toUpperCase())}`)).toBe(count)
  })

  it('is found by the search, name matches first', async () => {
    // The product word most names carry, so that the check does not depend on one vocabulary entry.
    const nameWords = new Map<string, number>()
    for (const server of servers) for (const word of new Set(wordsOf(server.name))) if (word.length >= 5 && !['server', 'tools'].includes(word)) nameWords.set(word, (nameWords.get(word) ?? 0) + 1)
    const [word] = [...nameWords].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))[0]!
    const prefix = word.slice(0, 4)
    const matching = servers.filter((s) => wordsOf([s.name, ...s.tags, s.description].join(' ')).some((w) => w.startsWith(prefix)))
    const inName = servers.filter((s) => wordsOf(s.name).some((w) => w.startsWith(prefix)))
    expect(inName.length).toBeGreaterThan(0)

    const response = await call('GET', `/api/mcp/servers/search?q=${prefix}&limit=100`, admin)
    expect(response.statusCode, response.body).toBe(200)
    const page: Page = response.json().data
    // Full-text matches are exactly the servers with a word starting so; PostgreSQL's trigram
    // matching may add names within a small typo.
    if (dialect === 'sqlite') expect(page.pagination.total).toBe(matching.length)
    else expect(page.pagination.total).toBeGreaterThanOrEqual(matching.length)
    const found = new Set(page.servers.map((s) => s.id))
    for (const server of inName.slice(0, 100)) expect(found.has(server.id), server.name).toBe(true)
    const firstOthers = page.servers.findIndex((s) => !wordsOf(s.name).some((w) => w.startsWith(prefix)))
    if (firstOthers !== -1) expect(firstOthers).toBe(Math.min(inName.length, 100))
  })

  it('marks the latest version by the rule, on the versions and on the server', async () => {
    const { t } = database
    const versions = await database.db.select().from(t.mcpServerVersions).orderBy(asc(t.mcpServerVersions.serverId))
    expect(versions.length).toBeGreaterThan(SEEDED / 2)
    for (const version of versions) expect((version.packages ?? []).flatMap((item, index) => packageProblems(item, `packages[${index}]`, 'global')), version.version).toEqual([])
    const byServer = new Map<string, typeof versions>()
    for (const version of versions) byServer.set(version.serverId, [...(byServer.get(version.serverId) ?? []), version])
    let prereleases = 0
    for (const server of servers) {
      const own = byServer.get(server.id) ?? []
      expect(own.length).toBeLessThanOrEqual(3)
      for (const version of own) {
        expect(semver.parse(version.version)?.raw).toBe(version.version)
        expect(parseVersion(version.version)).toEqual({ key: version.precedence, prerelease: version.prerelease })
        expect(version.prerelease).toBe(semver.prerelease(version.version) !== null)
        expect(version.updatedAt.getTime()).toBeGreaterThanOrEqual(version.createdAt.getTime())
        if (version.prerelease) prereleases++
      }
      expect(new Set(own.map((v) => v.precedence)).size).toBe(own.length)
      const latest = expectedLatest(own)
      expect(server.latest_version, server.slug).toBe(latest)
      expect(own.filter((v) => v.isLatest).map((v) => v.version)).toEqual(latest === null ? [] : [latest])
    }
    expect(prereleases).toBeGreaterThan(0)

    // Through the API: newest first by semver precedence, the mark where the rule puts it.
    for (const server of servers.filter((s) => byServer.has(s.id)).slice(0, 25)) {
      const response = await call('GET', `/api/mcp/servers/${server.id}/versions?limit=100`, admin)
      expect(response.statusCode, response.body).toBe(200)
      const listed: VersionBody[] = response.json().data.versions
      expect(listed.map((v) => v.version)).toEqual([...listed.map((v) => v.version)].sort(semver.rcompare))
      expect(listed.filter((v) => v.is_latest).map((v) => v.version)).toEqual(server.latest_version === null ? [] : [server.latest_version])
    }
  })

  it('seeds again without failing: the same servers once more, under free slugs', async () => {
    const before = new Map(servers.map((s) => [s.id, s]))
    const again = await seedCatalogue(database, { servers: SEEDED, seed: 42, now: NOW })
    expect(again).toMatchObject({ servers: SEEDED, skipped: 0, categoriesCreated: 0, categoriesUsed: 24 })
    const everything = await allServers()
    expect(everything).toHaveLength(2 * SEEDED)
    expect(await total('/api/mcp/servers?limit=1')).toBe(2 * SEEDED)
    const slugs = everything.map((s) => s.slug)
    expect(new Set(slugs).size).toBe(slugs.length)
    // Deterministic: the same seed gives the same names; their slugs moved on to the next suffix.
    const added = everything.filter((s) => !before.has(s.id))
    expect(added.map((s) => s.name).sort()).toEqual(servers.map((s) => s.name).sort())
    for (const server of added) expect(before.has(server.id)).toBe(false)
    expect(added.every((s) => !servers.some((old) => old.slug === s.slug))).toBe(true)
    // The categories were found, not duplicated.
    const categories: CategoryBody[] = (await call('GET', '/api/mcp/categories', admin)).json().data.categories
    expect(categories).toHaveLength(24)
    const { t } = database
    const [category] = await database.db.select({ id: t.mcpCategories.id }).from(t.mcpCategories).where(eq(t.mcpCategories.name, 'Databases'))
    expect(await total(`/api/mcp/servers?limit=1&category_id=${category!.id}`)).toBe(everything.filter((s) => s.category_id === category!.id).length)
  }, TIMEOUT)

  it('adds more with another seed, without versions, and every category when asked', async () => {
    const result = await seedCatalogue(database, { servers: 50, seed: 7, categories: SEED_CATEGORIES.length, versions: false, now: NOW })
    expect(result).toMatchObject({ servers: 50, versions: 0, categoriesCreated: SEED_CATEGORIES.length - 24, categoriesUsed: SEED_CATEGORIES.length })
    expect(await total('/api/mcp/servers?limit=1')).toBe(2 * SEEDED + 50)
  }, TIMEOUT)
})
