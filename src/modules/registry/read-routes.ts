import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { policy } from '../../auth/policies.js'
import { registryEntriesRepository } from '../../db/repositories/registry-entries.js'
import type { Database } from '../../db/types.js'
import { SerializedAnswers } from '../../http/serializers.js'
import type { BooleanSettingKey } from '../settings/definitions.js'
import { OFFICIAL_META, SERVER_SCHEMA_URL } from './server-json.js'
import { namespaceOf } from './server-json-export.js'
import { SubRegistry, type Missing, type RegistryList } from './sub-registry.js'

/**
 * The catalogue as an MCP sub-registry: the read part of the MCP Registry's generic API (v0.1),
 * served under /api/registry/v0.1 and again under /api/registry/v0 (the same answers; clients
 * written for the older path keep working). Its answers take the generic API's shapes, so that
 * registry clients read them unchanged: they are the one exception to this API's envelope.
 * Refusals by this service's own checks (401, 403, 400 for a bad query) keep the envelope.
 */

const tags = ['MCP Registry']
const read = policy.dual('mcp:read', { permission: 'mcp.servers.read', publicWhen: 'catalogue.registry_api_public' satisfies BooleanSettingKey })
const closed = { additionalProperties: false } as const

const ACCESS_TEXT =
  'Anonymous callers are admitted while the setting `catalogue.registry_api_public` is on (the empty security requirement); ' +
  'otherwise a session or a bearer token with `mcp:read` is needed. A credential that is presented is always checked (a bad one → 401).'
const SHAPE_TEXT =
  "Follows the MCP Registry's generic API v0.1: the answer is the registry's own shape, not this API's `{success, data}` envelope " +
  '(the one exception to it); a 404 is `{error, status}`. Refusals by this service (401, 403, 400 VALIDATION_ERROR) keep the envelope.'
const ITEM_TEXT =
  'One item per version of a global server (team servers never appear): `server` is the 2025-12-11 server.json of that version, ' +
  '`_meta["io.modelcontextprotocol.registry/official"]` its status (`deleted` for a yanked version), `publishedAt` (the version\'s creation), ' +
  '`updatedAt` (the later of the server\'s and the version\'s last change) and `isLatest`. A server created by hand is named `<namespace>/<slug>`, ' +
  'the namespace being PUBLIC_URL\'s host reversed.'

const Timestamp = Type.String({ format: 'date-time' })

const ServerDetail = Type.Object({
  $schema: Type.Optional(Type.String({ description: `The format's schema: ${SERVER_SCHEMA_URL}` })),
  name: Type.String({ description: 'Reverse-DNS namespace, a slash and the server\'s name, e.g. `io.github.user/weather`.' }),
  description: Type.String(),
  version: Type.String(),
}, {
  additionalProperties: true,
  description: `A server.json document in the MCP Registry's format of 2025-12-11 (${SERVER_SCHEMA_URL}); every member that schema defines may appear.`,
})

const OfficialMeta = Type.Object({
  status: Type.Union([Type.Literal('active'), Type.Literal('deprecated'), Type.Literal('deleted')]),
  statusMessage: Type.Optional(Type.String()),
  statusChangedAt: Type.Optional(Timestamp),
  publishedAt: Timestamp,
  updatedAt: Timestamp,
  isLatest: Type.Boolean(),
}, { additionalProperties: false })

const ServerResponse = Type.Object({
  server: ServerDetail,
  _meta: Type.Object({ [OFFICIAL_META]: OfficialMeta }, { additionalProperties: true, description: 'Registry-managed metadata.' }),
}, { $id: 'ServerResponse', description: 'One version of a server, as the MCP Registry\'s generic API answers it.' })

const ServerList = Type.Object({
  servers: Type.Array(Type.Ref('ServerResponse')),
  metadata: Type.Object({
    nextCursor: Type.Optional(Type.String({ description: 'Send it as `cursor` with the same query for the next page; absent on the last page.' })),
    count: Type.Integer({ description: 'Items in this answer.' }),
  }),
}, { $id: 'ServerList', description: 'A page of servers, as the MCP Registry\'s generic API answers it.' })

const NotFound = Type.Object({
  success: Type.Literal(false),
  error: Type.String({ description: '`Server not found` or `Version not found`.' }),
  code: Type.Literal('NOT_FOUND'),
  status: Type.Literal(404),
}, {
  description: "No such server (or nothing to show of it), or no such version. This API's error envelope, which also reads as the generic API's 404 " +
    '(`error` holds the text it defines) and carries the status.',
})

const IncludeDeleted = Type.Optional(Type.Boolean({ default: false, description: 'Also yanked versions (the registry\'s `deleted`).' }))

const ListQuery = Type.Object({
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 2048, description: 'The `metadata.nextCursor` of the previous page (opaque); anything else → 400.' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 30 })),
  search: Type.Optional(Type.String({ maxLength: 255, description: 'A case-insensitive substring of the registry name, the display name or the description; `%` and `_` are literal.' })),
  updated_since: Type.Optional(Type.String({ format: 'date-time', description: 'RFC 3339: items whose `updatedAt` is at or after it. Yanked versions are then included.' })),
  version: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: '`latest` for each server\'s latest version, or an exact version string.' })),
  include_deleted: IncludeDeleted,
}, closed)

const ItemQuery = Type.Object({ include_deleted: IncludeDeleted }, closed)

const ServerName = Type.String({ minLength: 1, maxLength: 500, description: 'The registry name, URL-encoded (`com.example%2Fweather`).' })
const NameParams = Type.Object({ serverName: ServerName }, closed)
const VersionParams = Type.Object({
  serverName: ServerName,
  version: Type.String({ minLength: 1, maxLength: 255, description: '`latest`, or an exact version, URL-encoded (`1.0.0%2Bbuild.1` for build metadata).' }),
}, closed)

const notFound = (missing: Missing) => ({
  success: false as const,
  error: missing === 'server' ? 'Server not found' : 'Version not found',
  code: 'NOT_FOUND' as const,
  status: 404 as const,
})

/** List answers, serialized and encoded once, beside the cached pages they were made from. */
const answers = new SerializedAnswers<RegistryList>()

export const registryReadRoutes: FastifyPluginAsyncTypebox<{ publicUrl: string }> = async (app, { publicUrl }) => {
  // Shared schemas added in a plugin's context make Fastify rebuild that context's validator from
  // its default builder, without the app's own (which refuses unknown query parameters instead of
  // dropping them): the app's compiler is put back.
  const validatorCompiler = app.validatorCompiler
  app.addSchema(ServerResponse)
  app.addSchema(ServerList)
  if (validatorCompiler !== undefined) app.setValidatorCompiler(validatorCompiler)

  // Built for the database the app serves (set up at start or later through /api/db/setup).
  let namespace: string | undefined
  const registries = new WeakMap<Database, SubRegistry>()
  const registry = (): SubRegistry => {
    const { database } = app.services
    let found = registries.get(database)
    if (found === undefined) {
      namespace ??= namespaceOf(publicUrl)
      found = new SubRegistry({ entries: registryEntriesRepository(database), namespace, database })
      registries.set(database, found)
    }
    return found
  }

  for (const [prefix, suffix, since] of [['/api/registry/v0.1', '', ''], ['/api/registry/v0', 'V0', ' The same as under /api/registry/v0.1.']] as const) {
    app.get(`${prefix}/servers`, {
      config: { auth: read },
      schema: {
        tags, operationId: `registryListServers${suffix}`,
        summary: 'List servers (MCP Registry API)',
        description: [
          ITEM_TEXT,
          'Ordered by registry name, then version newest first; follow `metadata.nextCursor` to the end to see every item once.',
          'Yanked versions are left out unless `include_deleted=true` or `updated_since` is given (as the official registry does).',
          SHAPE_TEXT, ACCESS_TEXT, since,
        ].filter(Boolean).join(' '),
        querystring: ListQuery,
        response: { 200: Type.Ref('ServerList') },
      },
    }, async (request, reply) => {
      const { cursor, limit = 30, search, updated_since: updatedSince, version, include_deleted: includeDeleted = false } = request.query
      const page = await registry().list({ cursor, limit, search, updatedSince, version, includeDeleted })
      // A cached page is the same object on every hit: serialized once, by the route's own schema.
      return answers.send(reply, page, () => page)
    })

    app.get(`${prefix}/servers/:serverName/versions`, {
      config: { auth: read },
      schema: {
        tags, operationId: `registryListServerVersions${suffix}`,
        summary: "List a server's versions (MCP Registry API)",
        description: [
          'Every version of the server, newest first by semantic-version precedence, in one answer. A server without a version to show → 404 `Server not found`.',
          ITEM_TEXT, SHAPE_TEXT, ACCESS_TEXT, since,
        ].filter(Boolean).join(' '),
        params: NameParams, querystring: ItemQuery,
        response: { 200: Type.Ref('ServerList'), 404: NotFound },
      },
    }, async (request, reply) => {
      const answer = await registry().versions(request.params.serverName, request.query.include_deleted ?? false)
      return typeof answer === 'string' ? reply.code(404).send(notFound(answer)) : answer
    })

    app.get(`${prefix}/servers/:serverName/versions/:version`, {
      config: { auth: read },
      schema: {
        tags, operationId: `registryGetServerVersion${suffix}`,
        summary: 'Get one version of a server (MCP Registry API)',
        description: [
          '`latest` answers the version marked latest (the highest active release, else the highest active pre-release); otherwise the version string must match exactly.',
          'No such server → 404 `Server not found`; no such version (or a yanked one without `include_deleted=true`) → 404 `Version not found`.',
          ITEM_TEXT, SHAPE_TEXT, ACCESS_TEXT, since,
        ].filter(Boolean).join(' '),
        params: VersionParams, querystring: ItemQuery,
        response: { 200: Type.Ref('ServerResponse'), 404: NotFound },
      },
    }, async (request, reply) => {
      const { serverName, version } = request.params
      const answer = await registry().version(serverName, version, request.query.include_deleted ?? false)
      return typeof answer === 'string' ? reply.code(404).send(notFound(answer)) : answer
    })
  }
}
