import { sql } from 'drizzle-orm'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import semver from 'semver'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { addVersion, createCategory, createServer, type ServerBody, type VersionBody } from '../helpers/catalogue.js'
import { DIALECTS } from '../helpers/database.js'
import { expectNoServerError, expectOutcome, fire, warmUp, winners } from '../helpers/races.js'
import { rawRows } from '../helpers/sql.js'
import { client, ROOMY_LIMITS, signUp, type Account, type Call } from '../helpers/teams.js'
import { prng } from '../helpers/random.js'

/**
 * Races on the catalogue's promises: one server per slug (explicit or derived), one category per
 * name whatever its case, one version per precedence, a latest version that stays right while its
 * versions change concurrently, and no server left pointing at a deleted category. Each race fires
 * its requests at once, then reads the rows back with raw SQL.
 */

const N = 10


interface VersionRow { id: string; version: string; status: string; isLatest: boolean }

/** The rule, with `semver` as the oracle: the highest active release, else the highest active pre-release, else none. */
function latestByRule(rows: readonly VersionRow[]): string | null {
  const active = rows.filter((row) => row.status === 'active')
  const releases = active.filter((row) => semver.prerelease(row.version) === null)
  const pool = releases.length > 0 ? releases : active
  return pool.map((row) => row.version).sort(semver.rcompare)[0] ?? null
}

describe.each(DIALECTS)('races on the catalogue on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  /** The first account: global_admin. */
  let admin: Account
  let seq = 0

  const db = () => app.services.database
  const newServer = (extra: Record<string, unknown> = {}): Promise<ServerBody> => createServer(call, admin, { name: `Raced ${++seq}`, ...extra })
  const versionsUrl = (serverId: string) => `/api/mcp/servers/${serverId}/versions`

  async function versionRows(serverId: string): Promise<VersionRow[]> {
    const rows = await rawRows(db(), sql`select id, version, status, is_latest from mcp_server_versions where server_id = ${serverId}`)
    // is_latest: a boolean on PostgreSQL, 0 or 1 on SQLite.
    return rows.map(([id, version, status, isLatest]) => ({ id: String(id), version: String(version), status: String(status), isLatest: isLatest === true || isLatest === 1 }))
  }

  async function storedLatest(serverId: string): Promise<string | null> {
    const [row] = await rawRows(db(), sql`select latest_version from mcp_servers where id = ${serverId}`)
    return (row![0] as string | null) ?? null
  }

  /** At most one mark, on the version the rule picks, and the same on the server (stored and answered). */
  async function expectLatestInvariant(serverId: string, label: string): Promise<string | null> {
    const rows = await versionRows(serverId)
    const expected = latestByRule(rows)
    const marked = rows.filter((row) => row.isLatest).map((row) => row.version)
    const state = `${label}: ${JSON.stringify(rows.map((row) => `${row.version}:${row.status}${row.isLatest ? '*' : ''}`))}`
    expect(marked, state).toEqual(expected === null ? [] : [expected])
    expect(await storedLatest(serverId), state).toBe(expected)
    const answered = await call('GET', `/api/mcp/servers/${serverId}`, admin)
    expect(answered.json().data.server.latest_version, state).toBe(expected)
    return expected
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: ROOMY_LIMITS })).app
    call = client(app)
    admin = await signUp(app, 'catalogue_race_admin')
  })
  afterAll(() => ctx.close())

  describe('servers', () => {
    it(`${N} creates with one explicit slug: one 201, ${N - 1} 409 SLUG_TAKEN, one row`, async () => {
      await warmUp(app, N)
      const responses = await fire(N, (i) => call('POST', '/api/mcp/servers/global', admin, { name: `Slug Race ${i}`, slug: 'slug-race' }))
      expectOutcome(responses, { 201: 1, '409 SLUG_TAKEN': N - 1 })

      const rows = await rawRows(db(), sql`select id, name from mcp_servers where slug = 'slug-race'`)
      const winner: ServerBody = winners(responses)[0]!.json().data.server
      expect(rows).toEqual([[winner.id, winner.name]])
      const [named] = await rawRows(db(), sql`select count(*) from mcp_servers where name like 'Slug Race %'`)
      expect(Number(named![0])).toBe(1)
    })

    it(`${N} creates with one name and no slug: ${N} 201, slugs name, name-2 … name-${N}`, async () => {
      await warmUp(app, N)
      const responses = await fire(N, () => call('POST', '/api/mcp/servers/global', admin, { name: 'Crowded Name' }))
      expectOutcome(responses, { 201: N })

      const expected = ['crowded-name', ...Array.from({ length: N - 1 }, (_, i) => `crowded-name-${i + 2}`)].sort()
      const answered = responses.map((response) => (response.json().data.server as ServerBody).slug)
      expect([...answered].sort()).toEqual(expected)
      const rows = await rawRows(db(), sql`select slug from mcp_servers where name = 'Crowded Name'`)
      expect(rows.map(([slug]) => slug).sort()).toEqual(expected)
    })

    it('derived slugs racing explicit ones for the same names: derived creates all 201, explicit 201 or 409 SLUG_TAKEN, slugs distinct', async () => {
      await createServer(call, admin, { name: 'Contested' })
      await warmUp(app, N)
      // Even calls derive their slug from "Contested" (contested-2, -3 … being free), odd calls ask for contested-2 … contested-6.
      const responses = await fire(N, (i) => call('POST', '/api/mcp/servers/global', admin, i % 2 === 0
        ? { name: 'Contested' }
        : { name: `Contested explicit ${i}`, slug: `contested-${(i + 3) / 2}` }))
      expectNoServerError(responses)
      responses.forEach((response, i) => {
        const allowed = i % 2 === 0 ? ['201'] : ['201', '409 SLUG_TAKEN']
        expect(allowed, response.body).toContain(response.statusCode < 300 ? String(response.statusCode) : `${response.statusCode} ${response.json().code}`)
      })
      const rows = await rawRows(db(), sql`select slug from mcp_servers where name like 'Contested%'`)
      const slugs = rows.map(([slug]) => String(slug))
      expect(new Set(slugs).size).toBe(slugs.length)
      expect(slugs).toHaveLength(1 + winners(responses).length)
      expect(winners(responses).map((response) => response.json().data.server.slug).sort()).toEqual(slugs.filter((slug) => slug !== 'contested').sort())
    })
  })

  describe('categories', () => {
    it(`${N} creates of one name in ${N} spellings of case: one 201, ${N - 1} 409 CATEGORY_NAME_TAKEN, one row`, async () => {
      const spellings = ['Data Tools', 'data tools', 'DATA TOOLS', 'Data tools', 'data Tools', 'dATA tOOLS', 'DaTa ToOlS', 'dAtA tOoLs', 'DATA tools', 'data TOOLS']
      expect(new Set(spellings).size).toBe(N)
      await warmUp(app, N)
      const responses = await fire(N, (i) => call('POST', '/api/mcp/categories', admin, { name: spellings[i] }))
      expectOutcome(responses, { 201: 1, '409 CATEGORY_NAME_TAKEN': N - 1 })

      const winner = winners(responses)[0]!.json().data.category
      const rows = await rawRows(db(), sql`select id, name from mcp_categories where lower(name) = 'data tools'`)
      expect(rows).toEqual([[winner.id, winner.name]])
    })

    it('a category deleted while servers are created in it: each create 201 or 400, never 5xx; no server points at a missing category', async () => {
      const createIn = (categoryId: string, name: string) => call('POST', '/api/mcp/servers/global', admin, { name, category_id: categoryId })
      const deleteCategory = (categoryId: string) => call('DELETE', `/api/mcp/categories/${categoryId}`, admin)
      /** Three ways to overlap the deletion with the creations; each answers [deletion, ...creations]. */
      const patterns: Array<(categoryId: string, name: (i: number) => string) => Promise<LightMyRequestResponse[]>> = [
        // All at once, the deletion fired first.
        async (categoryId, name) => fire(N, (i) => (i === 0 ? deleteCategory(categoryId) : createIn(categoryId, name(i)))),
        // All at once, the deletion fired last.
        async (categoryId, name) => {
          const responses = await fire(N, (i) => (i === N - 1 ? deleteCategory(categoryId) : createIn(categoryId, name(i))))
          return [responses[N - 1]!, ...responses.slice(0, N - 1)]
        },
        // Three chains of creations, each sending its next one when the previous answered; the
        // deletion starts once the first creation answered, while the chains go on.
        async (categoryId, name) => {
          const chain = async (start: number, length: number): Promise<LightMyRequestResponse[]> => {
            const answers: LightMyRequestResponse[] = []
            for (let i = start; i < start + length; i++) answers.push(await createIn(categoryId, name(i)))
            return answers
          }
          const first = createIn(categoryId, name(0))
          const chains = [chain(1, 3), chain(4, 3), chain(7, N - 8)]
          const deletion = first.then(() => deleteCategory(categoryId))
          const [deleted, opener, ...rest] = await Promise.all([deletion, first, ...chains])
          return [deleted, opener, ...rest.flat()] as LightMyRequestResponse[]
        },
      ]

      const outcomes = { created: 0, refused: 0 }
      for (const [round, pattern] of patterns.entries()) {
        const category = await createCategory(call, admin, { name: `Doomed ${dialect} ${round}` })
        await warmUp(app, N)
        const [deleted, ...creates] = await pattern(category.id, (i) => `In Doomed ${round} ${i}`)
        expect(creates).toHaveLength(N - 1)
        expectNoServerError([deleted!, ...creates])
        expect(deleted!.statusCode, deleted!.body).toBe(200)

        for (const response of creates) {
          expect([201, 400], response.body).toContain(response.statusCode)
          if (response.statusCode === 400) {
            expect(response.json().code).toBe('VALIDATION_ERROR')
            expect(JSON.stringify(response.json().details)).toContain('category_id')
          }
        }
        const created = winners(creates).map((response) => response.json().data.server as ServerBody)
        outcomes.created += created.length
        outcomes.refused += creates.length - created.length

        // The category is gone, its servers are uncategorized, none dangles anywhere.
        expect(await rawRows(db(), sql`select id from mcp_categories where id = ${category.id}`)).toEqual([])
        const stored = await rawRows(db(), sql`select name, category_id from mcp_servers where name like ${`In Doomed ${round} %`}`)
        expect(stored.map(([name]) => name).sort()).toEqual(created.map((server) => server.name).sort())
        expect(stored.filter(([, categoryId]) => categoryId !== null)).toEqual([])
        const dangling = await rawRows(db(), sql`
          select s.id, s.category_id from mcp_servers s
          where s.category_id is not null and not exists (select 1 from mcp_categories c where c.id = s.category_id)`)
        expect(dangling).toEqual([])
      }
      expect(outcomes.created + outcomes.refused).toBe(patterns.length * (N - 1))
    })
  })

  describe('versions', () => {
    it(`${N} POSTs of one version: one 201, ${N - 1} 409 VERSION_EXISTS, one row`, async () => {
      const server = await newServer()
      await warmUp(app, N)
      const responses = await fire(N, () => call('POST', versionsUrl(server.id), admin, { version: '1.0.0' }))
      expectOutcome(responses, { 201: 1, '409 VERSION_EXISTS': N - 1 })

      const winner: VersionBody = winners(responses)[0]!.json().data.version
      const rows = await versionRows(server.id)
      expect(rows).toEqual([{ id: winner.id, version: '1.0.0', status: 'active', isLatest: true }])
      expect(await storedLatest(server.id)).toBe('1.0.0')
    })

    it(`${N} POSTs of one version with different build metadata: one 201, ${N - 1} 409 VERSION_EXISTS, one row`, async () => {
      const server = await newServer()
      const texts = ['2.0.0', ...Array.from({ length: N - 1 }, (_, i) => `2.0.0+b${i + 1}`)]
      await warmUp(app, N)
      const responses = await fire(N, (i) => call('POST', versionsUrl(server.id), admin, { version: texts[i] }))
      expectOutcome(responses, { 201: 1, '409 VERSION_EXISTS': N - 1 })

      const winner: VersionBody = winners(responses)[0]!.json().data.version
      expect(texts).toContain(winner.version)
      expect(await versionRows(server.id)).toEqual([{ id: winner.id, version: winner.version, status: 'active', isLatest: true }])
      expect(await storedLatest(server.id)).toBe(winner.version)
    })

    it(`${N} POSTs of one pre-release with different build metadata, on a server with versions: one 201, one row`, async () => {
      const server = await newServer()
      await addVersion(call, admin, server.id, { version: '1.0.0' })
      const texts = Array.from({ length: N }, (_, i) => `1.1.0-rc.1+build.${i}`)
      await warmUp(app, N)
      const responses = await fire(N, (i) => call('POST', versionsUrl(server.id), admin, { version: texts[i] }))
      expectOutcome(responses, { 201: 1, '409 VERSION_EXISTS': N - 1 })
      const rows = await versionRows(server.id)
      expect(rows.map((row) => row.version.split('+')[0]).sort()).toEqual(['1.0.0', '1.1.0-rc.1'])
      await expectLatestInvariant(server.id, 'after the pre-release race')
    })

    it('the latest version stays right under ~20 mixed concurrent changes, round after round', async () => {
      const random = prng(dialect === 'sqlite' ? 0xca7a : 0x1095)
      const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!
      const server = await newServer()
      for (const version of ['1.0.0', '1.1.0', '1.2.0-rc.1', '0.9.0']) await addVersion(call, admin, server.id, { version })
      await expectLatestInvariant(server.id, 'seeded')

      const rounds = 5
      const perRound = 20
      const latestSeen = new Set<string | null>()
      const codes: Record<string, number> = {}
      let major = 1
      for (let round = 0; round < rounds; round++) {
        const rows = await versionRows(server.id)
        const changeable = rows.filter((row) => row.status !== 'yanked')
        const latest = rows.find((row) => row.isLatest)
        major += 1
        type Op = { label: string; send: () => Promise<LightMyRequestResponse>; allowed: string[] }
        const ops: Op[] = []
        const post = (version: string): Op => ({
          label: `POST ${version}`, send: () => call('POST', versionsUrl(server.id), admin, { version }), allowed: ['201', '409 VERSION_EXISTS'],
        })
        const change = (row: VersionRow, status: 'active' | 'deprecated' | 'yanked'): Op => ({
          label: `PUT ${row.version} ${status}`,
          send: () => call('PUT', `${versionsUrl(server.id)}/${row.id}`, admin, { status }),
          allowed: ['200', '409 VERSION_YANKED'],
        })
        // Aimed at the current latest: deprecate it, yank it, and add releases above it, at once.
        if (latest !== undefined) ops.push(change(latest, 'deprecated'), change(latest, random() < 0.5 ? 'yanked' : 'active'))
        ops.push(post(`${major}.0.0`), post(`${major}.0.0-rc.${round}`), post(`${major + 1}.0.0-alpha`))
        while (ops.length < perRound) {
          const roll = random()
          if (roll < 0.3) {
            ops.push(post(`${pick([0, 1, major])}.${Math.floor(random() * 12)}.${Math.floor(random() * 3)}`))
          } else if (roll < 0.45) {
            ops.push(post(`${pick([1, major, major + 1])}.0.0-${pick(['alpha', 'beta', 'rc'])}.${Math.floor(random() * 4)}`))
          } else if (changeable.length > 0) {
            const row = pick(changeable)
            const r = random()
            ops.push(change(row, r < 0.45 ? 'deprecated' : r < 0.85 ? 'active' : 'yanked'))
          }
        }

        await warmUp(app, perRound)
        const responses = await fire(ops.length, (i) => ops[i]!.send())
        expectNoServerError(responses)
        responses.forEach((response, i) => {
          const key = response.statusCode < 300 ? String(response.statusCode) : `${response.statusCode} ${response.json().code}`
          expect(ops[i]!.allowed, `${ops[i]!.label}: ${response.body}`).toContain(key)
          codes[key] = (codes[key] ?? 0) + 1
        })
        latestSeen.add(await expectLatestInvariant(server.id, `after round ${round}`))
      }

      // Each status kind answered, and the mark did move: the rounds exercised what they claim to.
      expect(Object.keys(codes).sort(), JSON.stringify(codes)).toEqual(expect.arrayContaining(['200', '201', '409 VERSION_EXISTS']))
      expect(latestSeen.size, [...latestSeen].join(', ')).toBeGreaterThan(1)
      const listed = await call('GET', `${versionsUrl(server.id)}?limit=100`, admin)
      const versions: VersionBody[] = listed.json().data.versions
      expect(versions.map((version) => version.version)).toEqual(versions.map((version) => version.version).sort(semver.rcompare))
      expect(versions.filter((version) => version.is_latest).map((version) => version.version)).toEqual(
        [latestByRule(versions.map((version) => ({ id: version.id, version: version.version, status: version.status, isLatest: version.is_latest })))].filter((v) => v !== null),
      )
    })

    it('concurrent yanks of every version leave no latest version', async () => {
      const server = await newServer()
      const versions: VersionBody[] = []
      for (const version of ['1.0.0', '1.1.0', '2.0.0-beta', '2.0.0', '0.1.0-alpha']) versions.push(await addVersion(call, admin, server.id, { version }))
      await warmUp(app, N)
      const responses = await fire(N, (i) => call('PUT', `${versionsUrl(server.id)}/${versions[i % versions.length]!.id}`, admin, { status: 'yanked' }))
      expectOutcome(responses, { 200: versions.length, '409 VERSION_YANKED': N - versions.length })
      expect(await expectLatestInvariant(server.id, 'all yanked')).toBeNull()
      expect((await versionRows(server.id)).every((row) => row.status === 'yanked' && !row.isLatest)).toBe(true)
    })
  })
})
