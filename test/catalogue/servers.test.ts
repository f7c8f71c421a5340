import { sql } from 'drizzle-orm'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { addVersion, createCategory, createServer, insertTeamServer, type CategoryBody, type ServerBody } from '../helpers/catalogue.js'
import { manualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'
import { bearer, issueTokens } from '../helpers/oauth.js'
import { rawRows } from '../helpers/sql.js'
import { addMember, client, createTeam, ROOMY_LIMITS, signUp, type Account, type Call } from '../helpers/teams.js'

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE'
type Body = Record<string, unknown>

interface AuditEvent { id: string; type: string; actor_id: string | null; target: string | null; details: Record<string, unknown> }

const SERVERS = '/api/mcp/servers'
const GLOBAL = '/api/mcp/servers/global'
const UNKNOWN_ID = 'no-such-server-id'

/** 400 VALIDATION_ERROR with a detail for `field` (or for a part of it, e.g. `packages.0.identifier` for `packages.0`). */
function expectValidationError(response: LightMyRequestResponse, field: string): void {
  expect(response.statusCode, response.body).toBe(400)
  const body = response.json()
  expect(body).toMatchObject({ success: false, code: 'VALIDATION_ERROR' })
  expect(Array.isArray(body.details), response.body).toBe(true)
  const fields = (body.details as Array<{ field: string }>).map((detail) => detail.field)
  expect(fields.some((name) => name === field || name.startsWith(`${field}.`)), `${field} in ${JSON.stringify(fields)}`).toBe(true)
}

function expectCode(response: LightMyRequestResponse, status: number, code: string): void {
  expect(response.statusCode, response.body).toBe(status)
  expect(response.json()).toMatchObject({ success: false, code })
}

/** A body with `value` at a dotted field path (`remotes.0.url` becomes a remote of that URL). */
function withUrl(field: string, value: string): Body {
  return field === 'remotes.0.url' ? { remotes: [{ type: 'sse', url: value }] } : { [field]: value }
}

const URL_FIELDS = ['repository_url', 'website_url', 'icon_url', 'remotes.0.url']
const BAD_URLS = ['javascript:alert(1)', 'data:text/html,x', 'file:///etc/passwd', 'ftp://x', 'http://', 'not a url']
const SHA = 'a'.repeat(64)

describe.each(DIALECTS)('catalogue global servers on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  const clock = manualClock(Date.now())
  /** The first account: global_admin. */
  let admin: Account
  /** A global_user outside the team below. */
  let user: Account
  /** A global_user, team_user of the team below. */
  let member: Account
  let teamId: string
  let teamServerId: string
  let category: CategoryBody
  let readToken: string
  let userReadToken: string
  let adminReadToken: string
  let seq = 0
  const now = () => new Date(clock.now()).toISOString()
  const unique = (prefix: string) => `${prefix} ${++seq}`

  const asBearer = (method: Method, url: string, token: string, payload?: object) =>
    app.inject({ method, url, headers: bearer(token), ...(payload === undefined ? {} : { payload }) })
  const post = (body: Body, account: Account = admin) => call('POST', GLOBAL, account, body)
  const put = (id: string, body: Body, account: Account = admin) => call('PUT', `${GLOBAL}/${id}`, account, body)
  const create = (body: Body) => createServer(call, admin, { name: unique('Server'), ...body })
  const read = (id: string, account: Account = admin) => call('GET', `${SERVERS}/${id}`, account)
  const readServer = async (id: string, account: Account = admin): Promise<ServerBody> => {
    const response = await read(id, account)
    expect(response.statusCode, response.body).toBe(200)
    return response.json().data.server
  }
  const count = async (query: ReturnType<typeof sql>): Promise<number> =>
    Number((await rawRows(app.services.database, query))[0]![0])
  const total = async (url: string, account: Account = admin): Promise<number> => {
    const response = await call('GET', url, account)
    expect(response.statusCode, response.body).toBe(200)
    return response.json().data.pagination.total
  }
  const searchTotal = (word: string) => total(`${SERVERS}/search?q=${encodeURIComponent(word)}`)
  /** What a refused write must leave as it was. */
  const snapshot = async () => ({
    servers: await count(sql`select count(*) from mcp_servers`),
    tags: await count(sql`select count(*) from mcp_server_tags`),
    listed: await total(SERVERS),
  })
  const tagRows = async (id: string): Promise<string[]> =>
    (await rawRows(app.services.database, sql`select tag from mcp_server_tags where server_id = ${id}`)).map((row) => String(row[0])).sort()
  const auditEvents = async (type: string): Promise<AuditEvent[]> => {
    const response = await call('GET', `/api/admin/audit-log?type=${type}&limit=100`, admin)
    expect(response.statusCode, response.body).toBe(200)
    return response.json().data.events
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ clock, limits: ROOMY_LIMITS })).app
    call = client(app)
    admin = await signUp(app, 'srv_admin')
    user = await signUp(app, 'srv_user')
    member = await signUp(app, 'srv_member')
    teamId = (await createTeam(call, admin, 'Server Readers')).id
    await addMember(call, teamId, admin, member, 'team_user')
    teamServerId = await insertTeamServer(app.services.database, teamId, 'Team Private Server', { tags: ['private'] })
    category = await createCategory(call, admin, { name: 'Server Tests' })
    readToken = (await issueTokens(app, user.cookie, 'mcp:read')).access_token
    userReadToken = (await issueTokens(app, user.cookie, 'user:read')).access_token
    adminReadToken = (await issueTokens(app, admin.cookie, 'mcp:read')).access_token
  })
  afterAll(() => ctx.close())

  describe('POST /api/mcp/servers/global', () => {
    it('answers 201 with every field echoed, and the same on reading it back', async () => {
      const body = {
        name: 'Full Field Server',
        slug: 'full-field-server-custom',
        description: 'Every field set',
        long_description: '# Full\n\nMarkdown **text**.',
        category_id: category.id,
        tags: ['alpha', 'beta'],
        language: 'TypeScript',
        runtime: 'node',
        transport_type: 'http',
        status: 'deprecated',
        featured: true,
        repository_url: 'https://github.com/example/full',
        website_url: 'http://example.com/full',
        icon_url: 'https://example.com/icon.png',
        author_name: 'Ada Lovelace',
        organization: 'Example Org',
        license: 'MIT',
        packages: [{
          registry_type: 'npm',
          identifier: '@example/full',
          version: '1.2.3',
          runtime_args: ['-y'],
          environment_variables: [{ name: 'API_KEY', description: 'The key', required: true, secret: true, default: 'none' }],
        }],
        remotes: [{ type: 'streamable-http', url: 'https://mcp.example.com/mcp' }, { type: 'sse', url: 'http://mcp.example.com/sse' }],
      }
      const response = await post(body)
      expect(response.statusCode, response.body).toBe(201)
      expect(response.json()).toMatchObject({ success: true })
      const server: ServerBody = response.json().data.server
      expect(server).toEqual({
        ...body,
        id: expect.any(String),
        visibility: 'global',
        owner_team_id: null,
        latest_version: null,
        registry_name: null,
        source: 'manual',
        created_by: admin.id,
        created_at: now(),
        updated_at: now(),
      })
      expect(await readServer(server.id)).toEqual(server)
      expect(await readServer(server.slug, user)).toEqual(server)
    })

    it('fills the defaults', async () => {
      const server = await createServer(call, admin, { name: 'Minimal Server' })
      expect(server).toEqual({
        id: expect.any(String),
        name: 'Minimal Server',
        slug: 'minimal-server',
        description: '',
        long_description: null,
        category_id: null,
        tags: [],
        language: null,
        runtime: null,
        transport_type: 'stdio',
        status: 'active',
        featured: false,
        visibility: 'global',
        owner_team_id: null,
        repository_url: null,
        website_url: null,
        icon_url: null,
        author_name: null,
        organization: null,
        license: null,
        packages: [],
        remotes: [],
        latest_version: null,
        registry_name: null,
        source: 'manual',
        created_by: admin.id,
        created_at: now(),
        updated_at: now(),
      })
    })

    it('refuses a category_id of no category: 400 naming category_id', async () => {
      expectValidationError(await post({ name: unique('Lost'), category_id: 'no-such-category' }), 'category_id')
    })

    describe('slugs', () => {
      it('derives the slug from the name, then -2, -3 for the same name', async () => {
        const slugs = []
        for (let i = 0; i < 3; i++) slugs.push((await createServer(call, admin, { name: 'PostgreSQL MCP Server' })).slug)
        expect(slugs).toEqual(['postgresql-mcp-server', 'postgresql-mcp-server-2', 'postgresql-mcp-server-3'])
        for (const slug of slugs) expect((await readServer(slug)).slug).toBe(slug)
      })

      it.each([
        ['Ünïcode & Co. Server!', 'unicode-co-server'],
        ['  Spaced   Out  ', 'spaced-out'],
      ])('derives %j as %j', async (name, slug) => {
        expect((await createServer(call, admin, { name })).slug).toBe(slug)
      })

      it('takes an explicit free slug', async () => {
        const server = await createServer(call, admin, { name: 'Explicit Slug Server', slug: 'a1-b2-c3' })
        expect(server.slug).toBe('a1-b2-c3')
        expect((await readServer('a1-b2-c3')).id).toBe(server.id)
      })

      it('refuses a taken explicit slug: 409 SLUG_TAKEN', async () => {
        const first = await createServer(call, admin, { name: 'Slug Owner', slug: 'owned-slug' })
        expectCode(await post({ name: 'Slug Thief', slug: 'owned-slug' }), 409, 'SLUG_TAKEN')
        expect(await readServer('owned-slug')).toEqual(first)
      })

      it.each(['Bad_Slug', '-a', 'a--b', 'a-', 'UPPER', 'a b', 'a.b', '', 's'.repeat(101)])('refuses the explicit slug %j: 400 naming slug', async (slug) => {
        const before = await snapshot()
        expectValidationError(await post({ name: unique('Badly Slugged'), slug }), 'slug')
        expect(await snapshot()).toEqual(before)
      })

      it.each(['search', 'global', 'import'])('refuses the reserved slug %j when explicit: 400 naming slug', async (slug) => {
        const before = await snapshot()
        expectValidationError(await post({ name: unique('Reserved'), slug }), 'slug')
        expect(await snapshot()).toEqual(before)
      })

      it('refuses an explicit slug shaped like a server id, which would shadow that server', async () => {
        const other = await create({})
        const before = await snapshot()
        expectValidationError(await post({ name: unique('Shadow'), slug: other.id }), 'slug')
        expect(await snapshot()).toEqual(before)
        const named = await createServer(call, admin, { name: other.id })
        expect(named.slug).not.toBe(other.id)
        expect((await readServer(other.id)).id).toBe(other.id)
        expect((await readServer(named.slug)).id).toBe(named.id)
      })

      it('trims the name, and derives the slug from the trimmed name', async () => {
        const name = unique('Padded')
        const server = await createServer(call, admin, { name: `  ${name}  ` })
        expect(server.name).toBe(name)
        const renamed = await call('PUT', `/api/mcp/servers/global/${server.id}`, admin, { name: `\t${name} Two ` })
        expect(renamed.json().data.server.name).toBe(`${name} Two`)
      })

      it.each(['Search', 'Global', 'Import'])('gives a server named %j a slug it can be read by', async (name) => {
        const server = await createServer(call, admin, { name })
        expect(['search', 'global', 'import']).not.toContain(server.slug)
        expect(server.slug).toMatch(/^[a-z0-9]+(-[a-z0-9]+)*$/)
        expect((await readServer(server.slug)).id).toBe(server.id)
      })
    })

    describe('URLs', () => {
      it.each(['https://example.com', 'http://example.com/path?q=1#top', 'HTTPS://Example.COM:8443/x'])('accepts %j in every URL field', async (url) => {
        const server = await create({
          repository_url: url, website_url: url, icon_url: url, remotes: [{ type: 'streamable-http', url }],
        })
        expect(server).toMatchObject({ repository_url: url, website_url: url, icon_url: url, remotes: [{ type: 'streamable-http', url }] })
      })

      const cases = URL_FIELDS.flatMap((field) => BAD_URLS.map((url) => [field, url] as const))
      it.each(cases)('refuses %s %j: 400 naming the field', async (field, url) => {
        expectValidationError(await post({ name: unique('Bad URL'), ...withUrl(field, url) }), field)
      })
    })

    describe('packages and remotes', () => {
      const accepted: Array<[string, string]> = [
        ['npm', '@scope/name'],
        ['npm', 'name'],
        ['npm', 'server.js_x-1~'],
        ['pypi', 'mcp-server-git'],
        ['pypi', 'Django_Rest.Framework'],
        ['docker', 'ghcr.io/org/image:1.2.0'],
        ['docker', 'postgres'],
        ['docker', `localhost:5000/team/tool@sha256:${SHA}`],
        ['oci', 'ghcr.io/org/image:1.2.0'],
        ['nuget', 'Contoso.Mcp.Server'],
        ['nuget', 'Knapcode.SampleMcpServer'],
        ['mcpb', 'https://github.com/org/tool/releases/download/v1.0.0/tool.mcpb'],
      ]
      it.each(accepted)('accepts a %s package %j', async (registryType, identifier) => {
        const item = { registry_type: registryType, identifier, version: '1.0.0' }
        const server = await create({ packages: [item] })
        expect(server.packages).toEqual([item])
        expect((await readServer(server.id)).packages).toEqual([item])
      })

      const refused: Array<[string, Body, string]> = [
        ['an npm name in uppercase', { registry_type: 'npm', identifier: 'Name' }, 'packages.0'],
        ['an npm scope in uppercase', { registry_type: 'npm', identifier: '@Scope/name' }, 'packages.0'],
        ['an npm name with a space', { registry_type: 'npm', identifier: 'my package' }, 'packages.0'],
        ['an empty identifier', { registry_type: 'npm', identifier: '' }, 'packages.0'],
        ['no identifier', { registry_type: 'pypi' }, 'packages.0'],
        ['a pypi name with a space', { registry_type: 'pypi', identifier: 'mcp server' }, 'packages.0'],
        ['a docker image with a space', { registry_type: 'docker', identifier: 'ghcr.io/org/image 1.2.0' }, 'packages.0'],
        ['an oci image with a space', { registry_type: 'oci', identifier: 'image name' }, 'packages.0'],
        ['a docker image in uppercase', { registry_type: 'docker', identifier: 'Org/Image' }, 'packages.0'],
        ['a nuget id with a space', { registry_type: 'nuget', identifier: 'Some Package' }, 'packages.0'],
        ['a nuget id with two dots in a row', { registry_type: 'nuget', identifier: 'Some..Package' }, 'packages.0'],
        ['an mcpb bundle that is not an https URL', { registry_type: 'mcpb', identifier: 'http://example.com/tool.mcpb' }, 'packages.0'],
        ['an mcpb bundle given by file name', { registry_type: 'mcpb', identifier: 'tool.mcpb' }, 'packages.0'],
        ['an unknown registry type', { registry_type: 'cargo', identifier: 'some-crate' }, 'packages.0'],
        ['no registry type', { identifier: 'name' }, 'packages.0'],
        ['an unknown package field', { registry_type: 'npm', identifier: 'name', url: 'https://npmjs.com' }, 'packages.0'],
        ['a version with a space', { registry_type: 'npm', identifier: 'name', version: '1.0 beta' }, 'packages.0'],
        ...['1BAD', 'BAD-NAME', 'with space', '', 'ÄPFEL'].map((name): [string, Body, string] =>
          [`the environment variable name ${JSON.stringify(name)}`, { registry_type: 'npm', identifier: 'name', environment_variables: [{ name }] }, 'packages.0']),
        ['an environment variable with required as text', { registry_type: 'npm', identifier: 'name', environment_variables: [{ name: 'OK', required: 'yes' }] }, 'packages.0'],
        ['an environment variable with an unknown field', { registry_type: 'npm', identifier: 'name', environment_variables: [{ name: 'OK', value: 'x' }] }, 'packages.0'],
      ]
      it.each(refused)('refuses %s: 400 naming the package', async (_, item, field) => {
        const before = await snapshot()
        expectValidationError(await post({ name: unique('Bad Package'), packages: [item] }), field)
        expect(await snapshot()).toEqual(before)
      })

      it('answers omitted description, required and secret of an environment variable as "", false, false', async () => {
        const server = await create({
          packages: [{
            registry_type: 'pypi',
            identifier: 'mcp-server-git',
            environment_variables: [{ name: 'REPO_DIR' }, { name: '_Token9', description: 'A token', required: true, secret: true }],
          }],
        })
        const expected = [{
          registry_type: 'pypi',
          identifier: 'mcp-server-git',
          environment_variables: [
            { name: 'REPO_DIR', description: '', required: false, secret: false },
            { name: '_Token9', description: 'A token', required: true, secret: true },
          ],
        }]
        expect(server.packages).toEqual(expected)
        expect((await readServer(server.id, user)).packages).toEqual(expected)
      })

      it.each(['streamable-http', 'sse'])('accepts a remote of type %s', async (type) => {
        const server = await create({ remotes: [{ type, url: 'https://remote.example.com/mcp' }] })
        expect(server.remotes).toEqual([{ type, url: 'https://remote.example.com/mcp' }])
      })

      it.each([
        ['type websocket', { type: 'websocket', url: 'https://remote.example.com' }, 'remotes.0.type'],
        ['type stdio', { type: 'stdio', url: 'https://remote.example.com' }, 'remotes.0.type'],
        ['no url', { type: 'sse' }, 'remotes.0.url'],
        ['an unknown field', { type: 'sse', url: 'https://remote.example.com', headers: {} }, 'remotes.0.headers'],
      ])('refuses a remote with %s: 400 naming the field', async (_, remote, field) => {
        expectValidationError(await post({ name: unique('Bad Remote'), remotes: [remote] }), field)
      })
    })

    describe('tags', () => {
      it('normalizes them: trimmed, lowercased, inner whitespace collapsed, duplicates dropped', async () => {
        const server = await create({ tags: [' SQL ', 'sql', 'Data  Base', 'DATA\tbase'] })
        expect(server.tags).toEqual(['sql', 'data base'])
        expect(await tagRows(server.id)).toEqual(['data base', 'sql'])
        expect((await readServer(server.id)).tags).toEqual(['sql', 'data base'])
      })

      it('accepts 20 tags and a tag of 50 characters', async () => {
        const twenty = Array.from({ length: 20 }, (_, i) => `tag-${i}`)
        expect((await create({ tags: twenty })).tags).toEqual(twenty)
        expect((await create({ tags: ['t'.repeat(50)] })).tags).toEqual(['t'.repeat(50)])
      })

      it.each([
        ['21 tags', Array.from({ length: 21 }, (_, i) => `tag-${i}`)],
        ['a tag of 51 characters', ['t'.repeat(51)]],
        ['a tag of spaces only', ['ok', '   ']],
        ['an empty tag', ['']],
        ['a tag that is a number', [5]],
      ])('refuses %s: 400 naming tags', async (_, tags) => {
        const before = await snapshot()
        expectValidationError(await post({ name: unique('Badly Tagged'), tags }), 'tags')
        expect(await snapshot()).toEqual(before)
      })
    })

    describe('lengths and types', () => {
      it.each([
        ['a name of 255 characters', { name: 'n'.repeat(255) }],
        ['a name of 1 character', { name: 'z' }],
        ['a description of 1000 characters', { name: 'Long Description', description: 'd'.repeat(1000) }],
        ['a long_description of 50 000 characters', { name: 'Long Long Description', long_description: 'l'.repeat(50_000) }],
        ['a license of 100 characters', { name: 'Licensed', license: 'l'.repeat(100) }],
      ])('accepts %s', async (_, body) => {
        const response = await post(body)
        expect(response.statusCode, response.body).toBe(201)
        expect(response.json().data.server).toMatchObject(body)
      })

      const invalid: Array<[string, Body, string]> = [
        ['no name', { description: 'Nameless' }, 'name'],
        ['an empty name', { name: '' }, 'name'],
        ['a blank name', { name: '  \t ' }, 'name'],
        ['a name of 256 characters', { name: 'n'.repeat(256) }, 'name'],
        ['a description of 1001 characters', { name: 'Wordy', description: 'd'.repeat(1001) }, 'description'],
        ['a null description', { name: 'Null Words', description: null }, 'description'],
        ['a long_description of 50 001 characters', { name: 'Very Wordy', long_description: 'l'.repeat(50_001) }, 'long_description'],
        ['a license of 101 characters', { name: 'Over Licensed', license: 'l'.repeat(101) }, 'license'],
        ['an empty language', { name: 'No Language', language: '' }, 'language'],
        ['an unknown transport_type', { name: 'Carrier Pigeon', transport_type: 'pigeon' }, 'transport_type'],
        ['an unknown status', { name: 'Limbo', status: 'archived' }, 'status'],
        ['featured as text', { name: 'Starry', featured: 'true' }, 'featured'],
        ['a visibility', { name: 'Sneaky Team', visibility: 'team' }, 'visibility'],
        ['a created_by', { name: 'Forged Author', created_by: 'someone' }, 'created_by'],
        ['an unknown field', { name: 'Extra', stars: 5 }, 'stars'],
      ]
      it.each(invalid)('refuses %s: 400 naming the field, nothing written', async (_, body, field) => {
        const before = await snapshot()
        expectValidationError(await post(body), field)
        expect(await snapshot()).toEqual(before)
      })
    })

    describe('a refused create writes nothing', () => {
      const cases: Array<[string, string, Body, number, string, string | undefined]> = [
        ['a taken explicit slug', 'quillwort', { slug: 'half-written-taken' }, 409, 'SLUG_TAKEN', undefined],
        ['an unknown category', 'marzipanic', { category_id: 'no-such-category' }, 400, 'VALIDATION_ERROR', 'category_id'],
        ['a reserved slug', 'zeppelinoid', { slug: 'import' }, 400, 'VALIDATION_ERROR', 'slug'],
        ['a tag of spaces only', 'fennelwhisk', { tags: ['good', '  '] }, 400, 'VALIDATION_ERROR', 'tags'],
        ['a bad package', 'gorgonzolix', { packages: [{ registry_type: 'npm', identifier: 'Bad Name' }] }, 400, 'VALIDATION_ERROR', 'packages.0'],
      ]
      it.each(cases)('given %s: no server, tag or search entry; the same body without the fault is found', async (_, word, fault, status, code, field) => {
        if ((await call('GET', `${SERVERS}/half-written-taken`, admin)).statusCode === 404) {
          await createServer(call, admin, { name: 'Half Written Owner', slug: 'half-written-taken' })
        }
        const body = { name: `Refused ${word}`, description: `All about ${word}`, tags: [word, 'refusal'], category_id: category.id }
        const before = await snapshot()
        expect(await searchTotal(word)).toBe(0)

        const response = await post({ ...body, ...fault })
        expectCode(response, status, code)
        if (field !== undefined) expectValidationError(response, field)

        expect(await snapshot()).toEqual(before)
        expect(await searchTotal(word)).toBe(0)
        expect(await total(`${SERVERS}?tag=${word}`)).toBe(0)
        expect(await count(sql`select count(*) from mcp_server_tags where tag = ${word}`)).toBe(0)

        // The control: the same server without the fault is written and found.
        const server = await createServer(call, admin, body)
        expect(await searchTotal(word)).toBe(1)
        expect(await total(`${SERVERS}?tag=${word}`)).toBe(1)
        expect(await snapshot()).toEqual({ servers: before.servers + 1, tags: before.tags + 2, listed: before.listed + 1 })
        expect(server.category_id).toBe(category.id)
      })
    })
  })

  describe('GET /api/mcp/servers/:id', () => {
    it('reads a server by id and by slug', async () => {
      const server = await create({ slug: 'read-me-by-slug', description: 'Readable' })
      for (const key of [server.id, server.slug]) {
        const response = await read(key, user)
        expect(response.statusCode, response.body).toBe(200)
        expect(response.json()).toMatchObject({ success: true, data: { server } })
      }
    })

    it.each([UNKNOWN_ID, 'no-such-slug'])('answers 404 NOT_FOUND for %j', async (key) => {
      expectCode(await read(key), 404, 'NOT_FOUND')
    })

    it('shows a team server to its members and to the global admin only', async () => {
      expectCode(await read(teamServerId, user), 404, 'NOT_FOUND')
      expectCode(await asBearer('GET', `${SERVERS}/${teamServerId}`, readToken), 404, 'NOT_FOUND')
      const forMember = await readServer(teamServerId, member)
      expect(forMember).toMatchObject({ id: teamServerId, visibility: 'team', owner_team_id: teamId, name: 'Team Private Server' })
      expect(await readServer(forMember.slug, member)).toEqual(forMember)
      expect(await readServer(teamServerId, admin)).toEqual(forMember)
      expectCode(await read(forMember.slug, user), 404, 'NOT_FOUND')
    })
  })

  describe('PUT /api/mcp/servers/global/:id', () => {
    it('changes only the fields sent; updated_at moves, created_at stays', async () => {
      const server = await create({ description: 'Before', language: 'Go', tags: ['keep'], featured: false })
      clock.advance(10_000)
      const response = await put(server.id, { description: 'After', featured: true, status: 'maintenance' })
      expect(response.statusCode, response.body).toBe(200)
      const expected = { ...server, description: 'After', featured: true, status: 'maintenance', updated_at: now() }
      expect(response.json().data.server).toEqual(expected)
      expect(await readServer(server.id)).toEqual(expected)
    })

    it('null clears every nullable field', async () => {
      const server = await create({
        long_description: 'Long', category_id: category.id, language: 'Rust', runtime: 'binary',
        repository_url: 'https://example.com/r', website_url: 'https://example.com/w', icon_url: 'https://example.com/i.png',
        author_name: 'Someone', organization: 'Some Org', license: 'Apache-2.0',
      })
      const cleared = {
        long_description: null, category_id: null, language: null, runtime: null, repository_url: null, website_url: null,
        icon_url: null, author_name: null, organization: null, license: null,
      }
      const response = await put(server.id, cleared)
      expect(response.statusCode, response.body).toBe(200)
      expect(response.json().data.server).toEqual({ ...server, ...cleared, updated_at: now() })
      expect(await readServer(server.id)).toMatchObject(cleared)
    })

    it('replaces packages, remotes and moves the server to a category', async () => {
      const server = await create({ packages: [{ registry_type: 'npm', identifier: 'old' }], remotes: [{ type: 'sse', url: 'https://old.example.com' }] })
      const response = await put(server.id, {
        packages: [{ registry_type: 'docker', identifier: 'ghcr.io/org/new:2.0.0', environment_variables: [{ name: 'TOKEN' }] }],
        remotes: [],
        category_id: category.id,
      })
      expect(response.statusCode, response.body).toBe(200)
      expect(response.json().data.server).toMatchObject({
        packages: [{ registry_type: 'docker', identifier: 'ghcr.io/org/new:2.0.0', environment_variables: [{ name: 'TOKEN', description: '', required: false, secret: false }] }],
        remotes: [],
        category_id: category.id,
      })
    })

    it('keeps the slug when the name changes', async () => {
      const server = await createServer(call, admin, { name: 'Renamed Later' })
      expect(server.slug).toBe('renamed-later')
      const response = await put(server.id, { name: 'Renamed Now' })
      expect(response.statusCode, response.body).toBe(200)
      expect(response.json().data.server).toMatchObject({ name: 'Renamed Now', slug: 'renamed-later' })
      expect((await readServer('renamed-later')).name).toBe('Renamed Now')
      expect((await createServer(call, admin, { name: 'Renamed Later' })).slug).toBe('renamed-later-2')
    })

    it('changes the slug to a free one; the old slug then answers 404 and is free again', async () => {
      const server = await create({ slug: 'slug-before-move' })
      const response = await put(server.id, { slug: 'slug-after-move' })
      expect(response.statusCode, response.body).toBe(200)
      expect(response.json().data.server.slug).toBe('slug-after-move')
      expect((await readServer('slug-after-move')).id).toBe(server.id)
      expectCode(await read('slug-before-move'), 404, 'NOT_FOUND')
      expect((await create({ slug: 'slug-before-move' })).slug).toBe('slug-before-move')
      // Setting the slug it has already is no conflict.
      expect((await put(server.id, { slug: 'slug-after-move' })).statusCode).toBe(200)
    })

    it('refuses a taken slug: 409 SLUG_TAKEN, nothing changed', async () => {
      const owner = await create({ slug: 'slug-kept-by-owner' })
      const server = await create({ description: 'Unchanged', tags: ['steady'] })
      const response = await put(server.id, { slug: 'slug-kept-by-owner', description: 'Changed', tags: ['moved'] })
      expectCode(response, 409, 'SLUG_TAKEN')
      expect(await readServer(server.id)).toEqual(server)
      expect(await readServer('slug-kept-by-owner')).toEqual(owner)
      expect(await tagRows(server.id)).toEqual(['steady'])
    })

    it('replaces the tags, and the tag filter follows', async () => {
      const server = await create({ tags: ['before-tag-x', 'shared-tag-x'] })
      expect(await total(`${SERVERS}?tag=before-tag-x`)).toBe(1)
      const response = await put(server.id, { tags: [' After-Tag-X ', 'SHARED-TAG-X', 'after-tag-x'] })
      expect(response.statusCode, response.body).toBe(200)
      expect(response.json().data.server.tags).toEqual(['after-tag-x', 'shared-tag-x'])
      expect(await tagRows(server.id)).toEqual(['after-tag-x', 'shared-tag-x'])
      expect(await total(`${SERVERS}?tag=before-tag-x`)).toBe(0)
      expect(await total(`${SERVERS}?tag=AFTER-TAG-X`, user)).toBe(1)
      expect(await total(`${SERVERS}?tag=shared-tag-x`)).toBe(1)

      expect((await put(server.id, { tags: [] })).json().data.server.tags).toEqual([])
      expect(await tagRows(server.id)).toEqual([])
      expect(await total(`${SERVERS}?tag=after-tag-x`)).toBe(0)
    })

    it('finds the server by its slug too', async () => {
      const server = await create({ slug: 'updated-by-slug' })
      const response = await put('updated-by-slug', { license: 'BSD-3-Clause' })
      expect(response.statusCode, response.body).toBe(200)
      expect(response.json().data.server).toMatchObject({ id: server.id, license: 'BSD-3-Clause' })
    })

    const invalid: Array<[string, Body, string]> = [
      ['an empty body', {}, 'body'],
      ['a null name', { name: null }, 'name'],
      ['a blank name', { name: '   ' }, 'name'],
      ['a null description', { description: null }, 'description'],
      ['null tags', { tags: null }, 'tags'],
      ['a bad slug', { slug: 'Bad_Slug' }, 'slug'],
      ['a reserved slug', { slug: 'search' }, 'slug'],
      ['a javascript: URL', { website_url: 'javascript:alert(1)' }, 'website_url'],
      ['a tag of spaces only', { tags: ['  '] }, 'tags'],
      ['21 tags', { tags: Array.from({ length: 21 }, (_, i) => `t${i}`) }, 'tags'],
      ['an unknown category', { category_id: 'no-such-category' }, 'category_id'],
      ['a visibility', { visibility: 'team' }, 'visibility'],
    ]
    it.each(invalid)('refuses %s: 400, nothing changed', async (_, body, field) => {
      const server = await create({ tags: ['untouched'], website_url: 'https://untouched.example.com', category_id: category.id })
      expectValidationError(await put(server.id, body), field)
      expect(await readServer(server.id)).toEqual(server)
      expect(await tagRows(server.id)).toEqual(['untouched'])
    })

    it('answers 404 NOT_FOUND for an unknown server', async () => {
      expectCode(await put(UNKNOWN_ID, { description: 'Ghost' }), 404, 'NOT_FOUND')
    })

    it('answers 404 NOT_FOUND for a team server, which stays as it was', async () => {
      const before = await readServer(teamServerId)
      expectCode(await put(teamServerId, { description: 'Made global?' }), 404, 'NOT_FOUND')
      expectCode(await put(before.slug, { name: 'Renamed' }), 404, 'NOT_FOUND')
      expect(await readServer(teamServerId)).toEqual(before)
    })
  })

  describe('DELETE /api/mcp/servers/global/:id', () => {
    it('removes the server with its versions and tags, and from search; its slug is free again', async () => {
      const server = await create({ slug: 'doomed-server', description: 'About the xylocarpous doom', tags: ['doomed'] })
      await addVersion(call, admin, server.id, { version: '1.0.0' })
      await addVersion(call, admin, server.id, { version: '1.1.0', changelog: 'More doom' })
      expect((await readServer(server.id)).latest_version).toBe('1.1.0')
      expect(await count(sql`select count(*) from mcp_server_versions where server_id = ${server.id}`)).toBe(2)
      expect(await searchTotal('xylocarpous')).toBe(1)
      const before = await snapshot()

      const response = await call('DELETE', `${GLOBAL}/${server.id}`, admin)
      expect(response.statusCode, response.body).toBe(200)
      expect(response.json()).toMatchObject({ success: true })

      expectCode(await read(server.id), 404, 'NOT_FOUND')
      expectCode(await read('doomed-server'), 404, 'NOT_FOUND')
      expect(await count(sql`select count(*) from mcp_server_versions where server_id = ${server.id}`)).toBe(0)
      expect(await tagRows(server.id)).toEqual([])
      expect(await searchTotal('xylocarpous')).toBe(0)
      expect(await total(`${SERVERS}?tag=doomed`)).toBe(0)
      expect(await snapshot()).toEqual({ servers: before.servers - 1, tags: before.tags - 1, listed: before.listed - 1 })
      expectCode(await call('DELETE', `${GLOBAL}/${server.id}`, admin), 404, 'NOT_FOUND')
      expect((await create({ slug: 'doomed-server' })).slug).toBe('doomed-server')
    })

    it('deletes by slug', async () => {
      const server = await create({ slug: 'deleted-by-slug' })
      expect((await call('DELETE', `${GLOBAL}/deleted-by-slug`, admin)).statusCode).toBe(200)
      expectCode(await read(server.id), 404, 'NOT_FOUND')
    })

    it('answers 404 NOT_FOUND for an unknown server and for a team server, which stays', async () => {
      expectCode(await call('DELETE', `${GLOBAL}/${UNKNOWN_ID}`, admin), 404, 'NOT_FOUND')
      expectCode(await call('DELETE', `${GLOBAL}/${teamServerId}`, admin), 404, 'NOT_FOUND')
      expect((await readServer(teamServerId, member)).id).toBe(teamServerId)
    })
  })

  describe('authorization', () => {
    it('reads: a global_user session and a bearer token with mcp:read', async () => {
      const server = await create({ slug: 'readable-by-all', description: 'Readable everywhere', tags: ['readable-by-all'] })
      for (const response of [
        await read(server.id, user),
        await asBearer('GET', `${SERVERS}/${server.id}`, readToken),
        await asBearer('GET', `${SERVERS}/readable-by-all`, adminReadToken),
        await asBearer('GET', `${SERVERS}?tag=readable-by-all`, readToken),
        await asBearer('GET', `${SERVERS}/search?q=readable`, readToken),
      ]) {
        expect(response.statusCode, response.body).toBe(200)
        expect(JSON.stringify(response.json().data)).toContain(server.id)
      }
    })

    it.each([`${SERVERS}/ID`, SERVERS, `${SERVERS}/search?q=x`])('GET %s: 403 with required_scope to a bearer token without mcp:read', async (path) => {
      const server = await create({})
      const response = await asBearer('GET', path.replace('ID', server.id), userReadToken)
      expect(response.statusCode).toBe(403)
      expect(response.json()).toMatchObject({ success: false, code: 'FORBIDDEN', details: { required_scope: 'mcp:read' } })
    })

    it('writes by a global_user: 403 with required_permission, even with an invalid body; nothing changed', async () => {
      const server = await create({ tags: ['guarded'] })
      const before = await snapshot()
      for (const response of [
        await post({ name: 'By A User' }, user),
        await post({ name: '', bogus: true }, user),
        await put(server.id, { name: 'Taken Over' }, user),
        await put(server.id, {}, user),
        await call('DELETE', `${GLOBAL}/${server.id}`, user),
        await call('DELETE', `${GLOBAL}/${teamServerId}`, member),
      ]) {
        expect(response.statusCode, response.body).toBe(403)
        expect(response.json()).toMatchObject({ success: false, code: 'FORBIDDEN', details: { required_permission: 'mcp.servers.manage' } })
      }
      expect(await readServer(server.id)).toEqual(server)
      expect(await snapshot()).toEqual(before)
    })

    it('writes with a bearer token, even the admin\'s with mcp:read: 401 (session only), nothing changed', async () => {
      const server = await create({})
      const before = await snapshot()
      for (const response of [
        await asBearer('POST', GLOBAL, adminReadToken, { name: 'Via Token' }),
        await asBearer('PUT', `${GLOBAL}/${server.id}`, adminReadToken, { name: 'Via Token' }),
        await asBearer('DELETE', `${GLOBAL}/${server.id}`, adminReadToken),
      ]) {
        expect(response.statusCode, response.body).toBe(401)
        expect(response.json().code).toBe('UNAUTHORIZED')
      }
      expect(await readServer(server.id)).toEqual(server)
      expect(await snapshot()).toEqual(before)
    })

    it('without credentials, a body that is not JSON at all: 401, not 400', async () => {
      for (const [method, url] of [['POST', GLOBAL], ['POST', '/api/mcp/categories']] as const) {
        const response = await app.inject({ method, url, headers: { 'content-type': 'application/json' }, payload: '{"name": ' })
        expect(response.statusCode, response.body).toBe(401)
        expect(response.json().code).toBe('UNAUTHORIZED')
      }
    })

    const routes: Array<[Method, string, unknown]> = [
      ['GET', '/api/mcp/categories', undefined],
      ['POST', '/api/mcp/categories', { name: '', color: 1 }],
      ['PUT', '/api/mcp/categories/CATEGORY', {}],
      ['DELETE', '/api/mcp/categories/CATEGORY', undefined],
      ['GET', SERVERS, undefined],
      ['GET', `${SERVERS}?limit=0&sort=sideways`, undefined],
      ['GET', `${SERVERS}/search?q=anything`, undefined],
      ['GET', `${SERVERS}/search`, undefined],
      ['GET', `${SERVERS}/SERVER`, undefined],
      ['POST', GLOBAL, { name: 'Anonymous' }],
      ['POST', GLOBAL, { name: '', slug: 'Bad_Slug', tags: 'x' }],
      ['PUT', `${GLOBAL}/SERVER`, {}],
      ['PUT', `${GLOBAL}/SERVER`, { name: 'Anonymous' }],
      ['DELETE', `${GLOBAL}/SERVER`, undefined],
      ['GET', `${SERVERS}/SERVER/versions`, undefined],
      ['POST', `${SERVERS}/SERVER/versions`, { version: '', bogus: true }],
      ['PUT', `${SERVERS}/SERVER/versions/no-such-version`, {}],
    ]
    it.each(routes)('%s %s without credentials: 401 UNAUTHORIZED before validation, nothing changed', async (method, path, payload) => {
      const server = await create({})
      const before = await snapshot()
      const url = path.replace('SERVER', server.id).replace('CATEGORY', category.id)
      const response = await call(method, url, undefined, payload)
      expect(response.statusCode, response.body).toBe(401)
      expect(response.json()).toMatchObject({ success: false, code: 'UNAUTHORIZED' })
      expect(await snapshot()).toEqual(before)
      expect(await readServer(server.id)).toEqual(server)
    })
  })

  describe('audit', () => {
    it('records catalogue.server_created, _updated and _deleted with the admin as actor and the server as target', async () => {
      const server = await createServer(call, admin, { name: 'Audited Server' })
      expect((await auditEvents('catalogue.server_created')).find((event) => event.target === server.id)).toMatchObject({
        type: 'catalogue.server_created', actor_id: admin.id, target: server.id, details: { name: 'Audited Server', slug: server.slug },
      })

      expect((await put(server.id, { description: 'Audited change', featured: true })).statusCode).toBe(200)
      const updated = (await auditEvents('catalogue.server_updated')).find((event) => event.target === server.id)
      expect(updated).toMatchObject({ type: 'catalogue.server_updated', actor_id: admin.id, target: server.id })
      expect(updated?.details.fields).toEqual(expect.arrayContaining(['description', 'featured']))

      expect((await call('DELETE', `${GLOBAL}/${server.id}`, admin)).statusCode).toBe(200)
      expect((await auditEvents('catalogue.server_deleted')).find((event) => event.target === server.id)).toMatchObject({
        type: 'catalogue.server_deleted', actor_id: admin.id, target: server.id, details: { name: 'Audited Server', slug: server.slug },
      })
    })

    it('records nothing for a refused write', async () => {
      const taken = await create({ slug: 'audit-taken-slug' })
      const server = await create({})
      const ids = async () => Promise.all(['created', 'updated', 'deleted'].map(async (kind) =>
        (await auditEvents(`catalogue.server_${kind}`)).map((event) => event.id)))
      const before = await ids()
      expect((await post({ name: 'Audit Clash', slug: taken.slug })).statusCode).toBe(409)
      expect((await post({ name: 'Audit Lost', category_id: 'no-such-category' })).statusCode).toBe(400)
      expect((await put(server.id, { slug: taken.slug })).statusCode).toBe(409)
      expect((await put(UNKNOWN_ID, { description: 'x' })).statusCode).toBe(404)
      expect((await call('DELETE', `${GLOBAL}/${UNKNOWN_ID}`, admin)).statusCode).toBe(404)
      expect((await post({ name: 'Audit User' }, user)).statusCode).toBe(403)
      expect(await ids()).toEqual(before)
    })
  })
})
