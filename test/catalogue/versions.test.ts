import { sql } from 'drizzle-orm'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import semver from 'semver'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { addVersion, createServer, type ServerBody, type VersionBody } from '../helpers/catalogue.js'
import { DIALECTS } from '../helpers/database.js'
import { bearer, issueTokens } from '../helpers/oauth.js'
import { rawRows } from '../helpers/sql.js'
import { client, ROOMY_LIMITS, signUp, type Account, type Call } from '../helpers/teams.js'

/**
 * Versions of a catalogue server: semver validation and uniqueness (build metadata does not make
 * a version distinct), newest-first listing by precedence, the transitions (active ⇄ deprecated,
 * anything → yanked, yanked final) and the latest version: the highest active release, else the
 * highest active pre-release, else none, marked on exactly one version and on the server.
 */

const fields = (response: LightMyRequestResponse): string[] => (response.json().details ?? []).map((detail: { field: string }) => detail.field)

describe.each(DIALECTS)('server versions on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  /** The first account: global_admin. */
  let admin: Account
  /** A global_user: may read the catalogue, not manage it. */
  let user: Account
  let seq = 0

  const newServer = (extra: Record<string, unknown> = {}): Promise<ServerBody> => createServer(call, admin, { name: `Versioned ${dialect} ${++seq}`, ...extra })
  const versionsUrl = (server: string) => `/api/mcp/servers/${server}/versions`
  const add = (server: string, version: string, extra: Record<string, unknown> = {}) => addVersion(call, admin, server, { version, ...extra })
  const put = (server: string, versionId: string, body: unknown, as: Account = admin) => call('PUT', `${versionsUrl(server)}/${versionId}`, as, body)

  /** Every version of the server, walking pages of 100. */
  async function allVersions(server: string): Promise<VersionBody[]> {
    const versions: VersionBody[] = []
    for (let offset = 0; ; offset += 100) {
      const response = await call('GET', `${versionsUrl(server)}?limit=100&offset=${offset}`, admin)
      expect(response.statusCode, response.body).toBe(200)
      const { data } = response.json()
      versions.push(...data.versions)
      if (!data.pagination.has_more) return versions
    }
  }

  async function serverOf(server: string): Promise<ServerBody> {
    const response = await call('GET', `/api/mcp/servers/${server}`, admin)
    expect(response.statusCode, response.body).toBe(200)
    return response.json().data.server
  }

  /** Exactly `expected` carries is_latest (none when null), and it is the server's latest_version. */
  async function expectLatest(server: string, expected: string | null): Promise<void> {
    const versions = await allVersions(server)
    expect(versions.filter((version) => version.is_latest).map((version) => version.version)).toEqual(expected === null ? [] : [expected])
    expect((await serverOf(server)).latest_version).toBe(expected)
  }

  const countVersions = async (serverId: string): Promise<number> => {
    const [row] = await rawRows(app.services.database, sql`select count(*) from mcp_server_versions where server_id = ${serverId}`)
    return Number(row![0])
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: ROOMY_LIMITS })).app
    call = client(app)
    admin = await signUp(app, 'versions_admin')
    user = await signUp(app, 'versions_user')
  })
  afterAll(() => ctx.close())

  describe('who may call', () => {
    it('GET answers a session of any user, and a bearer token with mcp:read; 401 without credentials', async () => {
      const server = await newServer()
      await add(server.id, '1.0.0')
      const asUser = await call('GET', versionsUrl(server.id), user)
      expect(asUser.statusCode, asUser.body).toBe(200)
      expect(asUser.json().data.versions.map((version: VersionBody) => version.version)).toEqual(['1.0.0'])

      const tokens = await issueTokens(app, user.cookie, 'mcp:read')
      const withToken = await app.inject({ method: 'GET', url: versionsUrl(server.id), headers: bearer(tokens.access_token) })
      expect(withToken.statusCode, withToken.body).toBe(200)
      expect(withToken.json().data.versions.map((version: VersionBody) => version.version)).toEqual(['1.0.0'])

      const anonymous = await call('GET', versionsUrl(server.id))
      expect(anonymous.statusCode).toBe(401)
    })

    it('GET with a bearer token lacking mcp:read: 403 naming the scope', async () => {
      const server = await newServer()
      const tokens = await issueTokens(app, user.cookie, 'account:read')
      const response = await app.inject({ method: 'GET', url: versionsUrl(server.id), headers: bearer(tokens.access_token) })
      expect(response.statusCode, response.body).toBe(403)
      expect(response.json()).toMatchObject({ code: 'FORBIDDEN', details: { required_scope: 'mcp:read' } })
    })

    it('POST and PUT as a global_user: 403 naming mcp.versions.manage, and nothing changes', async () => {
      const server = await newServer()
      const version = await add(server.id, '1.0.0')
      const created = await call('POST', versionsUrl(server.id), user, { version: '2.0.0' })
      expect(created.statusCode, created.body).toBe(403)
      expect(created.json()).toMatchObject({ code: 'FORBIDDEN', details: { required_permission: 'mcp.versions.manage' } })
      const updated = await put(server.id, version.id, { status: 'yanked' }, user)
      expect(updated.statusCode, updated.body).toBe(403)
      expect(updated.json()).toMatchObject({ code: 'FORBIDDEN', details: { required_permission: 'mcp.versions.manage' } })
      expect((await allVersions(server.id)).map((v) => [v.version, v.status])).toEqual([['1.0.0', 'active']])
    })

    it('POST and PUT refuse a bearer token (session only) and no credentials: 401', async () => {
      const server = await newServer()
      const version = await add(server.id, '1.0.0')
      const tokens = await issueTokens(app, admin.cookie, 'mcp:read')
      const headers = bearer(tokens.access_token)
      const created = await app.inject({ method: 'POST', url: versionsUrl(server.id), headers, payload: { version: '2.0.0' } })
      expect(created.statusCode, created.body).toBe(401)
      const updated = await app.inject({ method: 'PUT', url: `${versionsUrl(server.id)}/${version.id}`, headers, payload: { status: 'yanked' } })
      expect(updated.statusCode, updated.body).toBe(401)
      expect((await call('POST', versionsUrl(server.id), undefined, { version: '2.0.0' })).statusCode).toBe(401)
      expect((await allVersions(server.id)).map((v) => [v.version, v.status])).toEqual([['1.0.0', 'active']])
    })
  })

  describe('the server in the path', () => {
    it('is found by id or by slug', async () => {
      const server = await newServer({ slug: `by-slug-${dialect}` })
      const created = await call('POST', versionsUrl(server.slug), admin, { version: '1.0.0' })
      expect(created.statusCode, created.body).toBe(201)
      const version: VersionBody = created.json().data.version
      expect(version.server_id).toBe(server.id)

      const bySlug = await call('GET', versionsUrl(server.slug), user)
      const byId = await call('GET', versionsUrl(server.id), user)
      expect(bySlug.json().data.versions).toEqual(byId.json().data.versions)
      expect(byId.json().data.versions.map((v: VersionBody) => v.id)).toEqual([version.id])

      const updated = await put(server.slug, version.id, { changelog: 'Through the slug.' })
      expect(updated.statusCode, updated.body).toBe(200)
      expect(updated.json().data.version).toMatchObject({ id: version.id, changelog: 'Through the slug.' })
    })

    it('unknown server: 404 on GET, POST and PUT', async () => {
      const server = await newServer()
      const version = await add(server.id, '1.0.0')
      expect((await call('GET', versionsUrl('no-such-server'), admin)).statusCode).toBe(404)
      const created = await call('POST', versionsUrl('no-such-server'), admin, { version: '1.0.0' })
      expect(created.statusCode, created.body).toBe(404)
      expect(created.json().code).toBe('NOT_FOUND')
      expect((await put('no-such-server', version.id, { status: 'deprecated' })).statusCode).toBe(404)
      expect((await allVersions(server.id)).map((v) => v.status)).toEqual(['active'])
    })

    it('unknown version, or a version of another server: 404, and nothing changes', async () => {
      const [mine, other] = [await newServer(), await newServer()]
      await add(mine.id, '1.0.0')
      const foreign = await add(other.id, '1.0.0')
      const unknown = await put(mine.id, 'no-such-version', { status: 'deprecated' })
      expect(unknown.statusCode, unknown.body).toBe(404)
      expect(unknown.json().code).toBe('NOT_FOUND')
      const crossed = await put(mine.id, foreign.id, { status: 'yanked' })
      expect(crossed.statusCode, crossed.body).toBe(404)
      expect((await allVersions(other.id)).map((v) => v.status)).toEqual(['active'])
      expect((await allVersions(mine.id)).map((v) => v.status)).toEqual(['active'])
    })
  })

  describe('POST /api/mcp/servers/:id/versions', () => {
    it('answers 201 with the version; defaults: active, no changelog, date, packages or remotes', async () => {
      const server = await newServer()
      const response = await call('POST', versionsUrl(server.id), admin, { version: '1.4.0' })
      expect(response.statusCode, response.body).toBe(201)
      const version: VersionBody = response.json().data.version
      expect(version).toMatchObject({
        server_id: server.id, version: '1.4.0', status: 'active', changelog: null, release_date: null, packages: null, remotes: null, is_latest: true,
      })
      expect(version.id).toEqual(expect.any(String))
      expect(await allVersions(server.id)).toEqual([version])
    })

    it('stores changelog, release date, packages (normalized) and remotes', async () => {
      const server = await newServer()
      const version = await add(server.id, '2.1.0-rc.1+build.9', {
        status: 'deprecated',
        changelog: 'Adds schema inspection.',
        release_date: '2026-03-04T05:06:07Z',
        packages: [{ registry_type: 'npm', identifier: '@example/versioned-mcp', version: '2.1.0-rc.1', environment_variables: [{ name: 'API_KEY' }] }],
        remotes: [{ type: 'streamable-http', url: 'https://mcp.example.com/v2' }],
      })
      expect(version).toMatchObject({
        version: '2.1.0-rc.1+build.9',
        status: 'deprecated',
        changelog: 'Adds schema inspection.',
        release_date: '2026-03-04T05:06:07.000Z',
        packages: [{
          registry_type: 'npm', identifier: '@example/versioned-mcp', version: '2.1.0-rc.1',
          environment_variables: [{ name: 'API_KEY', description: '', required: false, secret: false }],
        }],
        remotes: [{ type: 'streamable-http', url: 'https://mcp.example.com/v2' }],
        is_latest: false,
      })
      expect(await allVersions(server.id)).toEqual([version])
    })

    it.each([
      'v1.2.3', '=1.2.3', ' 1.2.3', '1.2.3 ', '1.2', '1', '01.2.3', '1.2.3-01', '1.2.3-', '1.2.3+', 'latest', '', `1.0.0-${'a'.repeat(123)}`,
    ])('refuses %j: 400 VALIDATION_ERROR on version, nothing stored', async (text) => {
      const server = await newServer()
      const response = await call('POST', versionsUrl(server.id), admin, { version: text })
      expect(response.statusCode, response.body).toBe(400)
      expect(response.json().code).toBe('VALIDATION_ERROR')
      expect(fields(response)).toContain('version')
      expect(await countVersions(server.id)).toBe(0)
    })

    it('accepts 128 characters', async () => {
      const server = await newServer()
      const text = `1.0.0-${'a'.repeat(122)}`
      expect((await add(server.id, text)).version).toBe(text)
    })

    it.each([
      ['status yanked', { status: 'yanked' }, 'status'],
      ['an unknown status', { status: 'retired' }, 'status'],
      ['a release date that is not a date-time', { release_date: '2026-03-04' }, 'release_date'],
      ['a release date in words', { release_date: 'yesterday' }, 'release_date'],
      ['a package with a bad npm name', { packages: [{ registry_type: 'npm', identifier: 'Not A Package' }] }, 'packages'],
      ['a package of an unknown registry', { packages: [{ registry_type: 'cargo', identifier: 'x' }] }, 'packages'],
      ['a remote with a javascript: URL', { remotes: [{ type: 'sse', url: 'javascript:alert(1)' }] }, 'remotes'],
      ['a remote of an unknown type', { remotes: [{ type: 'websocket', url: 'https://example.com' }] }, 'remotes'],
      ['an unknown field', { is_latest: true }, 'is_latest'],
      ['no version', { version: undefined }, 'version'],
    ])('refuses %s: 400 naming the field', async (_, extra, field) => {
      const server = await newServer()
      const response = await call('POST', versionsUrl(server.id), admin, { version: '1.0.0', ...extra })
      expect(response.statusCode, response.body).toBe(400)
      expect(response.json().code).toBe('VALIDATION_ERROR')
      expect(fields(response).some((name) => name === field || name.startsWith(`${field}.`)), response.body).toBe(true)
      expect(await countVersions(server.id)).toBe(0)
    })

    it('a version once per server: 409 VERSION_EXISTS, also with other build metadata', async () => {
      const server = await newServer()
      const first = await add(server.id, '1.0.0')
      for (const text of ['1.0.0', '1.0.0+build.2', '1.0.0+20130313144700']) {
        const response = await call('POST', versionsUrl(server.id), admin, { version: text })
        expect(response.statusCode, `${text}: ${response.body}`).toBe(409)
        expect(response.json().code).toBe('VERSION_EXISTS')
      }
      await add(server.id, '1.0.0-rc.1+b.1')
      const again = await call('POST', versionsUrl(server.id), admin, { version: '1.0.0-rc.1' })
      expect(again.statusCode, again.body).toBe(409)
      expect(again.json().code).toBe('VERSION_EXISTS')
      expect((await allVersions(server.id)).map((v) => v.version)).toEqual(['1.0.0', '1.0.0-rc.1+b.1'])
      expect(await countVersions(server.id)).toBe(2)
      expect((await allVersions(server.id)).find((v) => v.version === '1.0.0')).toEqual(first)
    })

    it('the same version on another server is no conflict', async () => {
      const [a, b] = [await newServer(), await newServer()]
      await add(a.id, '1.0.0')
      expect((await add(b.id, '1.0.0+other')).server_id).toBe(b.id)
    })

    it('a yanked version keeps its string taken: 409 VERSION_EXISTS', async () => {
      const server = await newServer()
      const version = await add(server.id, '3.0.0')
      expect((await put(server.id, version.id, { status: 'yanked' })).statusCode).toBe(200)
      for (const text of ['3.0.0', '3.0.0+rebuilt']) {
        const response = await call('POST', versionsUrl(server.id), admin, { version: text })
        expect(response.statusCode, response.body).toBe(409)
        expect(response.json().code).toBe('VERSION_EXISTS')
      }
      expect((await allVersions(server.id)).map((v) => [v.version, v.status])).toEqual([['3.0.0', 'yanked']])
    })
  })

  describe('GET /api/mcp/servers/:id/versions', () => {
    const texts = [
      '1.9.0', '1.10.0', '1.10.0-rc.1', '0.9.0', '2.0.0-alpha', '2.0.0-alpha.1', '2.0.0-beta', '1.0.0', '1.0.0-alpha', '1.0.0-alpha.beta',
      '1.0.0-beta.11', '1.0.0-beta.2', '1.0.0-beta', '1.0.0-rc.1', '10.0.0', '2.0.0+build.5', '1.0.10', '1.0.9', '0.10.0-1', '0.10.0-a',
      '0.10.0-1.2', '0.10.0-alpha-1', '0.10.0', '9.99.999', '1.10.0-rc.1.0', '1.10.0-RC.2', '0.0.0-0', '0.0.1',
    ]

    it('lists newest first by semver precedence (yanked and deprecated listed with their status)', async () => {
      const server = await newServer()
      const ids = new Map<string, string>()
      for (const text of texts) ids.set(text, (await add(server.id, text)).id)
      await put(server.id, ids.get('10.0.0')!, { status: 'yanked' })
      await put(server.id, ids.get('1.9.0')!, { status: 'deprecated' })

      const listed = await allVersions(server.id)
      expect(listed.map((v) => v.version)).toEqual([...texts].sort(semver.rcompare))
      expect(listed.find((v) => v.version === '10.0.0')!.status).toBe('yanked')
      expect(listed.find((v) => v.version === '1.9.0')!.status).toBe('deprecated')
      expect(listed.every((v) => v.server_id === server.id)).toBe(true)
    })

    it('paginates: limit, offset, total, has_more; walking the pages visits each version once, in order', async () => {
      const server = await newServer()
      for (const text of texts) await add(server.id, text)
      const expected = [...texts].sort(semver.rcompare)

      const first = await call('GET', versionsUrl(server.id), admin)
      expect(first.json().data.pagination).toEqual({ total: texts.length, limit: 20, offset: 0, has_more: true })
      expect(first.json().data.versions.map((v: VersionBody) => v.version)).toEqual(expected.slice(0, 20))

      const walked: string[] = []
      for (let offset = 0; offset < texts.length + 5; offset += 5) {
        const response = await call('GET', `${versionsUrl(server.id)}?limit=5&offset=${offset}`, admin)
        expect(response.statusCode, response.body).toBe(200)
        const { versions, pagination } = response.json().data
        expect(pagination).toEqual({ total: texts.length, limit: 5, offset, has_more: offset + 5 < texts.length })
        walked.push(...versions.map((v: VersionBody) => v.version))
      }
      expect(walked).toEqual(expected)
    })

    it('orders long numeric pre-release identifiers by value, up to the 128-character limit, in the list and for the latest mark', async () => {
      const server = await newServer()
      // 99 nines, then 100 and 122 digits: numerically ascending (and semver agrees, the magnitudes differ).
      const texts = [`1.0.0-${'9'.repeat(99)}`, `1.0.0-2${'0'.repeat(99)}`, `1.0.0-1${'0'.repeat(121)}`, '1.0.0-alpha', '1.0.0-1']
      for (const text of texts) await add(server.id, text)
      const expected = [...texts].sort(semver.rcompare)
      expect(expected[0]).toBe('1.0.0-alpha')
      expect(expected.slice(1)).toEqual([texts[2], texts[1], texts[0], '1.0.0-1'])
      expect((await allVersions(server.id)).map((v) => v.version)).toEqual(expected)
      await put(server.id, (await allVersions(server.id)).find((v) => v.version === '1.0.0-alpha')!.id, { status: 'deprecated' })
      await expectLatest(server.id, texts[2]!)
    })

    it('an empty list for a server without versions; a bad limit is 400', async () => {
      const server = await newServer()
      const response = await call('GET', versionsUrl(server.id), user)
      expect(response.json().data).toEqual({ versions: [], pagination: { total: 0, limit: 20, offset: 0, has_more: false } })
      for (const query of ['limit=0', 'limit=101', 'offset=-1', 'limit=abc', 'sort=version']) {
        const refused = await call('GET', `${versionsUrl(server.id)}?${query}`, user)
        expect(refused.statusCode, `${query}: ${refused.body}`).toBe(400)
      }
    })
  })

  describe('is_latest and latest_version', () => {
    it('a new server has no latest version', async () => {
      const server = await newServer()
      expect(server.latest_version).toBeNull()
      await expectLatest(server.id, null)
    })

    it('follows the highest active release through additions, deprecation, re-activation and yanking', async () => {
      const server = await newServer()
      const v100 = await add(server.id, '1.0.0')
      expect(v100.is_latest).toBe(true)
      await expectLatest(server.id, '1.0.0')

      // A higher release takes the mark; the answer says so.
      const v110 = await add(server.id, '1.1.0')
      expect(v110.is_latest).toBe(true)
      await expectLatest(server.id, '1.1.0')

      // A higher pre-release does not, nor does a lower release.
      const rc = await add(server.id, '2.0.0-rc.1')
      expect(rc.is_latest).toBe(false)
      await expectLatest(server.id, '1.1.0')
      const v105 = await add(server.id, '1.0.5')
      expect(v105.is_latest).toBe(false)
      await expectLatest(server.id, '1.1.0')

      // Deprecating the latest moves the mark down; re-activating moves it back.
      const deprecated = await put(server.id, v110.id, { status: 'deprecated' })
      expect(deprecated.statusCode, deprecated.body).toBe(200)
      expect(deprecated.json().data.version).toMatchObject({ status: 'deprecated', is_latest: false })
      await expectLatest(server.id, '1.0.5')
      const reactivated = await put(server.id, v110.id, { status: 'active' })
      expect(reactivated.json().data.version).toMatchObject({ status: 'active', is_latest: true })
      await expectLatest(server.id, '1.1.0')

      // Yanking the latest moves the mark.
      expect((await put(server.id, v110.id, { status: 'yanked' })).json().data.version).toMatchObject({ status: 'yanked', is_latest: false })
      await expectLatest(server.id, '1.0.5')

      // A higher release added as deprecated does not take it.
      const v200 = await add(server.id, '2.0.0', { status: 'deprecated' })
      expect(v200.is_latest).toBe(false)
      await expectLatest(server.id, '1.0.5')

      // No active release left: the highest active pre-release.
      await put(server.id, v105.id, { status: 'yanked' })
      await expectLatest(server.id, '1.0.0')
      await put(server.id, v100.id, { status: 'deprecated' })
      await expectLatest(server.id, '2.0.0-rc.1')

      // Nothing active: no mark at all.
      await put(server.id, rc.id, { status: 'yanked' })
      await expectLatest(server.id, null)

      // A deprecated release re-activated becomes the latest again.
      await put(server.id, v200.id, { status: 'active' })
      await expectLatest(server.id, '2.0.0')
    })

    it('yanking every version leaves no latest version', async () => {
      const server = await newServer()
      const versions = [await add(server.id, '1.0.0'), await add(server.id, '1.1.0'), await add(server.id, '2.0.0-beta')]
      await expectLatest(server.id, '1.1.0')
      for (const version of versions) expect((await put(server.id, version.id, { status: 'yanked' })).statusCode).toBe(200)
      await expectLatest(server.id, null)
      const [row] = await rawRows(app.services.database, sql`select latest_version from mcp_servers where id = ${server.id}`)
      expect(row).toEqual([null])
    })

    it('with only pre-releases, the highest active pre-release; any release then wins', async () => {
      const server = await newServer()
      await add(server.id, '1.0.0-alpha')
      await expectLatest(server.id, '1.0.0-alpha')
      await add(server.id, '1.0.0-beta')
      await add(server.id, '0.9.0-rc.1')
      await add(server.id, '1.0.0-alpha.5')
      await expectLatest(server.id, '1.0.0-beta')
      await add(server.id, '1.0.0-beta.11')
      await add(server.id, '1.0.0-beta.2')
      await expectLatest(server.id, '1.0.0-beta.11')
      const low = await add(server.id, '0.1.0')
      expect(low.is_latest).toBe(true)
      await expectLatest(server.id, '0.1.0')
    })

    it('compares by precedence, not by text: 1.10.0 over 1.9.0; latest_version keeps the build metadata as given', async () => {
      const server = await newServer()
      await add(server.id, '1.10.0+build.7')
      await add(server.id, '1.9.0')
      await expectLatest(server.id, '1.10.0+build.7')
      await add(server.id, '1.10.1')
      await expectLatest(server.id, '1.10.1')
    })

    it('a deprecated version created first is never marked', async () => {
      const server = await newServer()
      await add(server.id, '1.0.0', { status: 'deprecated' })
      await expectLatest(server.id, null)
      await add(server.id, '0.5.0')
      await expectLatest(server.id, '0.5.0')
    })
  })

  describe('PUT /api/mcp/servers/:id/versions/:versionId', () => {
    it('active → deprecated → active → yanked', async () => {
      const server = await newServer()
      const version = await add(server.id, '1.0.0')
      for (const status of ['deprecated', 'active', 'yanked'] as const) {
        const response = await put(server.id, version.id, { status })
        expect(response.statusCode, response.body).toBe(200)
        expect(response.json().data.version).toMatchObject({ id: version.id, version: '1.0.0', status })
        expect((await allVersions(server.id))[0]!.status).toBe(status)
      }
    })

    it('deprecated → yanked directly', async () => {
      const server = await newServer()
      const version = await add(server.id, '1.0.0', { status: 'deprecated' })
      const response = await put(server.id, version.id, { status: 'yanked' })
      expect(response.statusCode, response.body).toBe(200)
      expect(response.json().data.version.status).toBe('yanked')
    })

    it('a yanked version is final: any change, even to yanked, is 409 VERSION_YANKED and changes nothing', async () => {
      const server = await newServer()
      const version = await add(server.id, '1.0.0', { changelog: 'Original.', release_date: '2026-01-01T00:00:00Z' })
      expect((await put(server.id, version.id, { status: 'yanked' })).statusCode).toBe(200)
      const [before] = await allVersions(server.id)
      for (const body of [
        { status: 'active' }, { status: 'deprecated' }, { status: 'yanked' }, { changelog: 'Rewritten.' }, { changelog: null },
        { release_date: '2027-01-01T00:00:00Z' }, { release_date: null }, { version: '1.0.0' }, { version: '1.0.0', changelog: 'Rewritten.' },
      ]) {
        const response = await put(server.id, version.id, body)
        expect(response.statusCode, `${JSON.stringify(body)}: ${response.body}`).toBe(409)
        expect(response.json().code).toBe('VERSION_YANKED')
      }
      expect(await allVersions(server.id)).toEqual([before])
      expect(before).toMatchObject({ status: 'yanked', changelog: 'Original.', release_date: '2026-01-01T00:00:00.000Z', is_latest: false })
    })

    it('changes the changelog and the release date, and clears them with null', async () => {
      const server = await newServer()
      const version = await add(server.id, '1.0.0')
      const set = await put(server.id, version.id, { changelog: 'Fixes the thing.', release_date: '2026-05-06T07:08:09.123Z' })
      expect(set.statusCode, set.body).toBe(200)
      expect(set.json().data.version).toMatchObject({ changelog: 'Fixes the thing.', release_date: '2026-05-06T07:08:09.123Z', status: 'active', is_latest: true })
      expect((await allVersions(server.id))[0]).toMatchObject({ changelog: 'Fixes the thing.', release_date: '2026-05-06T07:08:09.123Z' })
      const cleared = await put(server.id, version.id, { changelog: null, release_date: null })
      expect(cleared.statusCode, cleared.body).toBe(200)
      expect((await allVersions(server.id))[0]).toMatchObject({ changelog: null, release_date: null, status: 'active' })
    })

    it('the version string is immutable: a different one is 400 on version; the same one is accepted', async () => {
      const server = await newServer()
      const version = await add(server.id, '1.0.0')
      for (const other of ['1.0.1', '1.0.0+build.2', 'v1.0.0', '']) {
        const response = await put(server.id, version.id, { version: other, changelog: 'Sneaky.' })
        expect(response.statusCode, `${other}: ${response.body}`).toBe(400)
        expect(fields(response)).toContain('version')
      }
      expect((await allVersions(server.id))[0]).toMatchObject({ version: '1.0.0', changelog: null })

      const same = await put(server.id, version.id, { version: '1.0.0' })
      expect(same.statusCode, same.body).toBe(200)
      const withChange = await put(server.id, version.id, { version: '1.0.0', changelog: 'Same version.' })
      expect(withChange.statusCode, withChange.body).toBe(200)
      expect(withChange.json().data.version).toMatchObject({ version: '1.0.0', changelog: 'Same version.' })
    })

    it.each([
      ['an empty body', {}],
      ['an unknown field', { is_latest: true }],
      ['an unknown field next to a known one', { status: 'deprecated', prerelease: true }],
      ['an unknown status', { status: 'retired' }],
      ['a bad release date', { release_date: 'tomorrow' }],
      ['a changelog that is not text', { changelog: 42 }],
    ])('refuses %s: 400, nothing changes', async (_, body) => {
      const server = await newServer()
      const version = await add(server.id, '1.0.0')
      const response = await put(server.id, version.id, body)
      expect(response.statusCode, response.body).toBe(400)
      expect(response.json().code).toBe('VALIDATION_ERROR')
      expect(await allVersions(server.id)).toEqual([version])
    })
  })

  describe('deleting the server', () => {
    it('removes its versions', async () => {
      const server = await newServer()
      const other = await newServer()
      for (const text of ['1.0.0', '1.1.0-rc.1', '2.0.0']) await add(server.id, text)
      await add(other.id, '1.0.0')
      expect(await countVersions(server.id)).toBe(3)

      const response = await call('DELETE', `/api/mcp/servers/global/${server.id}`, admin)
      expect(response.statusCode, response.body).toBe(200)
      expect(await countVersions(server.id)).toBe(0)
      expect((await call('GET', versionsUrl(server.id), admin)).statusCode).toBe(404)
      expect((await call('POST', versionsUrl(server.id), admin, { version: '3.0.0' })).statusCode).toBe(404)
      expect(await countVersions(server.id)).toBe(0)
      expect(await countVersions(other.id)).toBe(1)
    })
  })
})
