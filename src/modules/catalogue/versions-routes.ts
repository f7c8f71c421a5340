import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { policy } from '../../auth/policies.js'
import { paginate } from '../../http/envelope.js'
import { requestActor } from '../../http/current-user.js'
import { CreateVersionBody, ServerParams, TeamServerParams, TeamVersionParams, UpdateVersionBody, VersionEnvelope, VersionListQuery, VersionPage, VersionParams } from './schemas.js'
import { ENTRY_RULES_TEXT } from './servers-routes.js'
import { teamOwner } from './servers.js'
import { versionView } from './views.js'

const tags = ['MCP Catalogue']
const manage = policy.session({ permission: 'mcp.versions.manage' })
/** A team's admins (and global admins) manage the versions of its servers; checked before the body is read. */
const manageTeam = policy.session({ teamPermission: 'team.servers.manage' })
const TEAM_TEXT = "For the team's team_admins and global admins (a non-member gets 404, a team_user 403); 404 for a server that is not this team's."

const CREATE_TEXT = [
  '`version` is a semantic version 2.0 (400 otherwise), unique per server: 409 VERSION_EXISTS, also for one differing only in build metadata.',
  'The highest active release (or, with none, the highest active pre-release) becomes `is_latest` and the server\'s `latest_version`.',
  `\`packages\` follow the entry rules of the server's visibility, whichever route adds the version. ${ENTRY_RULES_TEXT}`,
].join(' ')
const UPDATE_TEXT = [
  'Transitions: active ⇄ deprecated, anything → yanked. A yanked version is final: any change → 409 VERSION_YANKED; its version string stays taken.',
  'The version string is immutable (400 when a different one is sent). `is_latest` and `latest_version` follow in the same transaction.',
].join(' ')

export const versionRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const versions = () => app.services.versionService

  app.get('/api/mcp/servers/:id/versions', {
    config: { auth: policy.dual('mcp:read', { permission: 'mcp.servers.read' }) },
    schema: {
      tags, summary: "A server's versions, newest first by semver precedence",
      description: '1.10.0 above 1.9.0; a pre-release below its release; build metadata ignored. Yanked versions are listed with their status.',
      params: ServerParams, querystring: VersionListQuery, response: { 200: VersionPage },
    },
  }, async (request) => {
    const { limit = 20, offset = 0 } = request.query
    const page = await versions().list(request.params.id, requestActor(request), limit, offset)
    return { success: true as const, data: { versions: page.rows.map(versionView), pagination: paginate(page.total, limit, offset) } }
  })

  app.post('/api/mcp/servers/:id/versions', {
    config: { auth: manage },
    schema: {
      tags, summary: 'Add a version to a server',
      description: CREATE_TEXT,
      params: ServerParams, body: CreateVersionBody, response: { 201: VersionEnvelope },
    },
  }, async (request, reply) => {
    const version = await versions().create(request.params.id, request.body, requestActor(request))
    return reply.code(201).send({ success: true as const, message: 'Version created.', data: { version: versionView(version) } })
  })

  app.put('/api/mcp/servers/:id/versions/:versionId', {
    config: { auth: manage },
    schema: {
      tags, summary: "Change a version's status, changelog or release date",
      description: UPDATE_TEXT,
      params: VersionParams, body: UpdateVersionBody, response: { 200: VersionEnvelope },
    },
  }, async (request) => {
    const version = await versions().update(request.params.id, request.params.versionId, request.body, requestActor(request))
    return { success: true as const, message: 'Version updated.', data: { version: versionView(version) } }
  })

  app.post('/api/teams/:teamId/mcp/servers/:id/versions', {
    config: { auth: manageTeam },
    schema: {
      tags: [...tags, 'Teams'], summary: "Add a version to one of the team's servers",
      description: `${TEAM_TEXT} ${CREATE_TEXT}`,
      params: TeamServerParams, body: CreateVersionBody, response: { 201: VersionEnvelope },
    },
  }, async (request, reply) => {
    const { teamId, id } = request.params
    const version = await versions().create(id, request.body, requestActor(request), teamOwner(teamId))
    return reply.code(201).send({ success: true as const, message: 'Version created.', data: { version: versionView(version) } })
  })

  app.put('/api/teams/:teamId/mcp/servers/:id/versions/:versionId', {
    config: { auth: manageTeam },
    schema: {
      tags: [...tags, 'Teams'], summary: "Change a version of one of the team's servers",
      description: `${TEAM_TEXT} ${UPDATE_TEXT}`,
      params: TeamVersionParams, body: UpdateVersionBody, response: { 200: VersionEnvelope },
    },
  }, async (request) => {
    const { teamId, id, versionId } = request.params
    const version = await versions().update(id, versionId, request.body, requestActor(request), teamOwner(teamId))
    return { success: true as const, message: 'Version updated.', data: { version: versionView(version) } }
  })
}
