import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply } from 'fastify'
import { policy } from '../../auth/policies.js'
import type { ServerFilter, ServerRow } from '../../db/repositories/server-filters.js'
import type { Page } from '../../db/repositories/servers.js'
import { paginate } from '../../http/envelope.js'
import { SerializedAnswers } from '../../http/serializers.js'
import { requestActor } from '../../http/current-user.js'
import { CreateServerBody, Done, ServerEnvelope, ServerListQuery, ServerPage, ServerParams, ServerSearchQuery, TeamParams, TeamServerParams, UpdateServerBody } from './schemas.js'
import { GLOBAL_OWNER, teamOwner } from './servers.js'
import { serverView } from './views.js'

const tags = ['MCP Catalogue']
const read = policy.dual('mcp:read', { permission: 'mcp.servers.read' })
const teamTags = [...tags, 'Teams']
const manage = policy.session({ permission: 'mcp.servers.manage' })
/** A team's admins (and global admins) manage its servers; checked before the body is read. */
const manageTeam = policy.session({ teamPermission: 'team.servers.manage' })

const filterOf = (query: { category_id?: string; status?: ServerFilter['status']; transport_type?: ServerFilter['transportType']; language?: string; runtime?: string; featured?: boolean; tag?: string; installable?: boolean }): ServerFilter => ({
  categoryId: query.category_id,
  status: query.status,
  transportType: query.transport_type,
  language: query.language,
  runtime: query.runtime,
  featured: query.featured,
  tag: query.tag,
  installable: query.installable,
})

/**
 * Pages come from the page cache, where a hit is the same object, so the hottest reads of the
 * catalogue skip mapping, serializing and encoding 20 servers again. The key of the page's cache
 * entry covers everything the answer holds (viewer's visibility, query, limit and offset).
 */
const answers = new SerializedAnswers<Page<ServerRow>>()

const sendPage = (reply: FastifyReply, page: Page<ServerRow>, limit: number, offset: number): FastifyReply =>
  answers.send(reply, page, () => ({ success: true, data: { servers: page.rows.map(serverView), pagination: paginate(page.total, limit, offset) } }))

/** What a catalogue entry may make a satellite do; the same words on every route that stores packages. */
export const ENTRY_RULES_TEXT = [
  'A package names a package and nothing more (400 VALIDATION_ERROR naming each member, e.g. `packages[0].version`, and nothing written):',
  '`version` is a version of its registry type (npm: a semver version or range, never `file:`, `link:`, a URL, a git spec, an `npm:` alias or a dist-tag such as `latest`;',
  'pypi: a PEP 440 version or specifier; docker/oci: a tag or a sha256 digest); `runtime_args` are refused on a team\'s server and limited on a global one',
  '(npm `-y`, `--yes`, `--quiet`, `-q`; pypi `--quiet`, `-q`, `--no-progress`, `--python 3.x`; docker/oci none); environment variable names that change how a',
  'runtime loads code (`NODE_OPTIONS`, `NODE_PATH`, `LD_*`, `DYLD_*`, `PATH`, `HOME`, `npm_config_*`, `PYTHON*`, `UV_*`, `PIP_*`, `DOCKER_*`, …, in any case) are refused.',
].join(' ')

const CREATE_TEXT = [
  'Without `slug`, one is derived from the name and made unique (`name`, `name-2`, …); an explicit slug that is taken → 409 SLUG_TAKEN.',
  'Slugs are unique across global and team servers.',
  'URLs must be http or https. Packages follow their registry type (npm, pypi, docker, oci, nuget, mcpb); tags are normalized, at most 20.',
  ENTRY_RULES_TEXT,
].join(' ')
const UPDATE_TEXT = [
  'Only the fields sent change; `null` clears an optional field. The slug may change to a free one only (409 SLUG_TAKEN); renaming keeps the slug.',
  ENTRY_RULES_TEXT,
  'The server\'s `packages`, `remotes` and `transport_type` are what its versions without packages or remotes of their own run: an edit that removes or breaks',
  'a target some installation runs → 409 SERVER_IN_USE (saying how many), nothing written; any other edit of an installed target is followed by those installations',
  'in the same transaction (inputs derived again, `spec_revision` and their satellites\' desired-state documents move).',
].join(' ')
const TEAM_TEXT = [
  "A team server has the fields and rules of a global one, but only the team's members (and global admins) see it in every catalogue read.",
  "For the team's team_admins and global admins; a non-member gets 404, a team_user 403.",
].join(' ')

const FILTERS_TEXT = [
  'Filters combine (AND): `category_id`, `status`, `transport_type`, `featured` match exactly; `language`, `runtime` and `tag` case-insensitively.',
  '`installable=true`: servers whose latest version has a package of a registry type satellites run (npm, pypi, oci, docker) or a remote',
  '(a version without packages or remotes of its own has the server\'s); `installable=false`: the others, servers without a latest version among them.',
].join(' ')

export const serverRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const servers = () => app.services.serverService

  app.get('/api/mcp/servers', {
    config: { auth: read },
    schema: {
      tags, summary: 'Servers visible to the caller, filtered, sorted and paginated',
      description: `${FILTERS_TEXT} \`sort\`: \`name\` (default), \`-created_at\`, \`-updated_at\`; ties are broken by id, so paging visits each server once.`,
      querystring: ServerListQuery, response: { 200: ServerPage },
    },
  }, async (request, reply) => {
    const { limit = 20, offset = 0, sort = 'name' } = request.query
    return sendPage(reply, await servers().list(requestActor(request), filterOf(request.query), sort, limit, offset), limit, offset)
  })

  app.get('/api/mcp/servers/search', {
    config: { auth: read },
    schema: {
      tags, summary: 'Full-text search over name, tags and description, ranked by relevance',
      description: [
        '`q` is taken as plain words (letters and digits); every word must match the start of a word of the server (`postg` finds PostgreSQL).',
        'Quotes, `*`, `:`, `^`, `-`, parentheses and operators such as NEAR are not syntax here: they separate words.',
        'Servers with a query word in the name come first, then by relevance (name, then tags, then description), then by id.',
        `On PostgreSQL with pg_trgm, a name within a small typo of the query also matches, after every exact match. ${FILTERS_TEXT}`,
      ].join(' '),
      querystring: ServerSearchQuery, response: { 200: ServerPage },
    },
  }, async (request, reply) => {
    const { q, limit = 20, offset = 0 } = request.query
    return sendPage(reply, await servers().search(q, requestActor(request), filterOf(request.query), limit, offset), limit, offset)
  })

  app.get('/api/mcp/servers/:id', {
    config: { auth: read },
    schema: {
      tags, summary: 'A server, by id or slug',
      description: '404 when unknown or not visible to the caller (team servers are visible to their team and to global admins).',
      params: ServerParams, response: { 200: ServerEnvelope },
    },
  }, async (request) => {
    return { success: true as const, data: { server: serverView(await servers().get(request.params.id, requestActor(request))) } }
  })

  app.post('/api/mcp/servers/global', {
    config: { auth: manage },
    schema: {
      tags, summary: 'Create a global server (visible to everyone)',
      description: CREATE_TEXT,
      body: CreateServerBody, response: { 201: ServerEnvelope },
    },
  }, async (request, reply) => {
    const server = await servers().create(GLOBAL_OWNER, request.body, requestActor(request))
    return reply.code(201).send({ success: true as const, message: 'Server created.', data: { server: serverView(server) } })
  })

  app.put('/api/mcp/servers/global/:id', {
    config: { auth: manage },
    schema: {
      tags, summary: 'Change a global server (partial), by id or slug',
      description: UPDATE_TEXT,
      params: ServerParams, body: UpdateServerBody, response: { 200: ServerEnvelope },
    },
  }, async (request) => {
    const server = await servers().update(GLOBAL_OWNER, request.params.id, request.body, requestActor(request))
    return { success: true as const, message: 'Server updated.', data: { server: serverView(server) } }
  })

  app.delete('/api/mcp/servers/global/:id', {
    config: { auth: manage },
    schema: { tags, summary: 'Delete a global server and its versions', params: ServerParams, response: { 200: Done } },
  }, async (request) => {
    await servers().delete(GLOBAL_OWNER, request.params.id, requestActor(request))
    return { success: true as const, message: 'Server deleted.' }
  })

  app.post('/api/teams/:teamId/mcp/servers', {
    config: { auth: manageTeam },
    schema: {
      tags: teamTags, summary: 'Create a team server (visible to that team only)',
      description: `${TEAM_TEXT} 404 when the team does not exist. ${CREATE_TEXT}`,
      params: TeamParams, body: CreateServerBody, response: { 201: ServerEnvelope },
    },
  }, async (request, reply) => {
    const server = await servers().create(teamOwner(request.params.teamId), request.body, requestActor(request))
    return reply.code(201).send({ success: true as const, message: 'Server created.', data: { server: serverView(server) } })
  })

  app.put('/api/teams/:teamId/mcp/servers/:id', {
    config: { auth: manageTeam },
    schema: {
      tags: teamTags, summary: "Change one of the team's servers (partial), by id or slug",
      description: `${TEAM_TEXT} 404 for a server that is not this team's. ${UPDATE_TEXT}`,
      params: TeamServerParams, body: UpdateServerBody, response: { 200: ServerEnvelope },
    },
  }, async (request) => {
    const server = await servers().update(teamOwner(request.params.teamId), request.params.id, request.body, requestActor(request))
    return { success: true as const, message: 'Server updated.', data: { server: serverView(server) } }
  })

  app.delete('/api/teams/:teamId/mcp/servers/:id', {
    config: { auth: manageTeam },
    schema: {
      tags: teamTags, summary: "Delete one of the team's servers and its versions",
      description: `${TEAM_TEXT} 404 for a server that is not this team's.`,
      params: TeamServerParams, response: { 200: Done },
    },
  }, async (request) => {
    await servers().delete(teamOwner(request.params.teamId), request.params.id, requestActor(request))
    return { success: true as const, message: 'Server deleted.' }
  })
}
