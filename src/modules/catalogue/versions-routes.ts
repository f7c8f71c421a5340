import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { policy } from '../../auth/policies.js'
import { paginate } from '../../http/envelope.js'
import { catalogueActor } from './actor.js'
import { CreateVersionBody, ServerParams, UpdateVersionBody, VersionEnvelope, VersionListQuery, VersionPage, VersionParams } from './schemas.js'
import { versionView } from './views.js'

const tags = ['MCP Catalogue']
const manage = policy.session({ permission: 'mcp.versions.manage' })

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
    const page = await versions().list(request.params.id, catalogueActor(request), limit, offset)
    return { success: true as const, data: { versions: page.rows.map(versionView), pagination: paginate(page.total, limit, offset) } }
  })

  app.post('/api/mcp/servers/:id/versions', {
    config: { auth: manage },
    schema: {
      tags, summary: 'Add a version to a server',
      description: [
        '`version` is a semantic version 2.0 (400 otherwise), unique per server: 409 VERSION_EXISTS, also for one differing only in build metadata.',
        'The highest active release (or, with none, the highest active pre-release) becomes `is_latest` and the server\'s `latest_version`.',
      ].join(' '),
      params: ServerParams, body: CreateVersionBody, response: { 201: VersionEnvelope },
    },
  }, async (request, reply) => {
    const version = await versions().create(request.params.id, request.body, catalogueActor(request))
    return reply.code(201).send({ success: true as const, message: 'Version created.', data: { version: versionView(version) } })
  })

  app.put('/api/mcp/servers/:id/versions/:versionId', {
    config: { auth: manage },
    schema: {
      tags, summary: "Change a version's status, changelog or release date",
      description: [
        'Transitions: active ⇄ deprecated, anything → yanked. A yanked version is final: any change → 409 VERSION_YANKED; its version string stays taken.',
        'The version string is immutable (400 when a different one is sent). `is_latest` and `latest_version` follow in the same transaction.',
      ].join(' '),
      params: VersionParams, body: UpdateVersionBody, response: { 200: VersionEnvelope },
    },
  }, async (request) => {
    const version = await versions().update(request.params.id, request.params.versionId, request.body, catalogueActor(request))
    return { success: true as const, message: 'Version updated.', data: { version: versionView(version) } }
  })
}
