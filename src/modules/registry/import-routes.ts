import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { policy } from '../../auth/policies.js'
import { Nullable, Ok } from '../../http/envelope.js'
import { errors } from '../../http/errors.js'
import { requestActor } from '../../http/current-user.js'
import { ServerParams } from '../catalogue/schemas.js'
import { documentsOf, SERVER_SCHEMA_URL, type ServerJson } from './server-json.js'

const tags = ['MCP Catalogue']

/** Documents one import may hold; a registry's list pages are at most 100, a seed file a few hundred. */
export const MAX_IMPORT_DOCUMENTS = 1000
/** A thousand documents with their packages, inputs and remotes fit well within this. */
const IMPORT_BODY_LIMIT = 16 * 1024 * 1024

/**
 * A server.json document, in any of the shapes accepted: its members are checked by the importer,
 * document by document, so that one bad document is reported beside the others instead of
 * refusing the whole body.
 */
const Document = Type.Record(Type.String(), Type.Unknown(), {
  description: 'A server.json document (2025-12-11, or one of the two older shapes); checked document by document.',
})

const ListAnswer = Type.Object({
  servers: Type.Array(Type.Object({
    server: Document,
    _meta: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'The registry\'s metadata; its official `status` becomes the version\'s status.' })),
  }, { additionalProperties: false }), { maxItems: MAX_IMPORT_DOCUMENTS }),
  metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
}, { additionalProperties: false, description: 'A page of an MCP Registry\'s `GET /v0.1/servers`, as it answered.' })

const importExample = {
  $schema: SERVER_SCHEMA_URL,
  name: 'io.github.example/weather',
  title: 'Weather',
  description: 'Forecasts and current conditions for any city.',
  version: '1.2.0',
  repository: { url: 'https://github.com/example/weather-mcp', source: 'github' },
  websiteUrl: 'https://example.com/weather',
  packages: [{
    registryType: 'npm',
    identifier: '@example/weather-mcp',
    version: '1.2.0',
    transport: { type: 'stdio' },
    packageArguments: [{ type: 'named', name: '--units', value: 'metric' }],
    environmentVariables: [{ name: 'WEATHER_API_KEY', description: 'Your API key', isRequired: true, isSecret: true }],
  }],
  remotes: [{ type: 'streamable-http', url: 'https://mcp.example.com/weather', headers: [{ name: 'Authorization', value: 'Bearer {token}', isSecret: true }] }],
}

const ImportBody = Type.Union([
  ListAnswer,
  Document,
  // Items are judged one by one: one that is not even an object is reported invalid beside the others.
  Type.Array(Type.Unsafe<unknown>({ description: 'A server.json document, or a list item `{server, _meta}`.' }), {
    maxItems: MAX_IMPORT_DOCUMENTS, description: 'Several documents.',
  }),
], {
  description: `One document, an array of documents, or a registry's list answer; at most ${MAX_IMPORT_DOCUMENTS} documents.`,
  examples: [importExample, [importExample], { servers: [{ server: importExample, _meta: { 'io.modelcontextprotocol.registry/official': { status: 'active' } } }], metadata: { count: 1 } }],
})

const ImportStatusView = Type.Union([Type.Literal('created'), Type.Literal('updated'), Type.Literal('unchanged'), Type.Literal('invalid')])

const DocumentProblemView = Type.Object({
  field: Type.String({ description: 'A JSON path from the document\'s root, e.g. `packages[0].transport.url`; `(document)` for the whole.' }),
  message: Type.String(),
})

const ImportResultView = Type.Object({
  index: Type.Integer({ description: 'The document\'s position in the request, from 0.' }),
  name: Nullable(Type.String({ description: 'The document\'s `name`; null when it has none that can be read.' })),
  status: ImportStatusView,
  server_id: Type.Optional(Type.String({ description: 'The catalogue server the document created or matched; absent for an invalid document.' })),
  errors: Type.Optional(Type.Array(DocumentProblemView, { description: 'Why the document was not imported (invalid only).' })),
  warnings: Type.Optional(Type.Array(DocumentProblemView, {
    description: 'Packages and remotes the catalogue cannot run (a registry type it does not hold, an identifier, environment variable or header its rules refuse, ' +
      'a version, runner option or variable that would make a satellite run more than the package): ' +
      'the document was imported with them kept in its stored document and export, but they are not in the server\'s `packages` / `remotes`, ' +
      'so installations do not offer them. `field` names the member at fault, e.g. `packages[1].registryType` or `packages[0].version`. Absent when there are none.',
  })),
})

const ImportCountsView = Type.Object({
  created: Type.Integer(),
  updated: Type.Integer(),
  unchanged: Type.Integer(),
  invalid: Type.Integer(),
})

const ImportAnswer = Ok(Type.Object({
  results: Type.Array(ImportResultView, { description: 'One per document, in request order.' }),
  counts: ImportCountsView,
}), 'What became of each document; 200 even when every document is invalid.')

const tooMany = (count: number) =>
  errors.validation([{ field: 'body', message: `holds ${count} documents; at most ${MAX_IMPORT_DOCUMENTS} may be imported at once`, in: 'body' }])

/** Documented only: the handler sends the exporter's document, serialized as it is. */
const ServerJsonAnswer = Type.Unsafe<ServerJson>({
  type: 'object',
  description: 'The bare server.json document (MCP Registry format 2025-12-11), not wrapped in this API\'s `{success, data}` envelope, ' +
    'so that registry tools can read it as it is. Errors keep the envelope.',
  required: ['$schema', 'name', 'description', 'version'],
  properties: {
    $schema: Type.String({ description: `Always ${SERVER_SCHEMA_URL}.` }),
    name: Type.String({ description: 'The registry name (`namespace/name`).' }),
    title: Type.String(),
    description: Type.String({ maxLength: 100 }),
    version: Type.String(),
    websiteUrl: Type.String(),
    repository: Type.Object({ url: Type.String(), source: Type.String(), id: Type.Optional(Type.String()), subfolder: Type.Optional(Type.String()) }),
    icons: Type.Array(Type.Record(Type.String(), Type.Unknown())),
    packages: Type.Array(Type.Record(Type.String(), Type.Unknown())),
    remotes: Type.Array(Type.Record(Type.String(), Type.Unknown()), {
      description: 'Remotes: `type`, `url` (http or https without whitespace; `{name}` segments are filled in from `variables`), `headers`, `variables`.',
    }),
    _meta: Type.Record(Type.String(), Type.Unknown(), { description: 'What the publisher put there, for imported servers.' }),
  },
  additionalProperties: true,
  examples: [importExample],
})

export const registryImportRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post('/api/mcp/servers/import', {
    config: { auth: policy.session({ permission: 'mcp.servers.manage' }) },
    bodyLimit: IMPORT_BODY_LIMIT,
    // Counted before the schema runs: an array over the limit gets this one problem, not one per
    // shape of body it failed to be.
    preValidation: (request, _reply, done) => {
      done(Array.isArray(request.body) && request.body.length > MAX_IMPORT_DOCUMENTS ? tooMany(request.body.length) : undefined)
    },
    schema: {
      tags, operationId: 'importMcpServers', summary: 'Import MCP Registry server.json documents',
      description: [
        `The body is one server.json document, an array of them, or an MCP Registry list answer (\`{servers: [{server, _meta}], metadata}\`), at most ${MAX_IMPORT_DOCUMENTS} documents`,
        `(more → 400 VALIDATION_ERROR, nothing imported) and ${IMPORT_BODY_LIMIT / 1024 / 1024} MiB. Documents in the 2025-12-11 format are read as they are;`,
        'the May 2025 and July 2025 shapes (snake_case) are converted first. Each document is checked against the 2025-12-11 rules and imported in',
        'its own transaction, in order: an invalid one is reported with its problems (`field` is a JSON path in the document) and does not stop the others.',
        'Servers are matched by registry name only (a server created by hand is never taken over): an unknown name creates a global server',
        '(`source: registry`, slug derived from the title or the name\'s last part) → `created`; a known name with the same version (semver',
        'precedence), an equal document and the same status → `unchanged`; otherwise the version is added or refreshed → `updated`. The server\'s',
        'own fields follow a document only when its version is then the server\'s latest, so importing an older version later changes nothing else.',
        'The version\'s status comes from the list item\'s `_meta` (registry status `deleted` → `yanked`; a version yanked here stays yanked).',
        'The document\'s version must be a semantic version. A package the catalogue cannot run — a registry type other than npm, pypi, oci, nuget',
        'and mcpb (the format leaves the type open), or an identifier or environment variable the catalogue\'s own package rules refuse, or a package that',
        'would make a satellite run more than itself (a `file:`, URL or git version, a dist-tag, a runtime argument other than the harmless few or without',
        'a fixed value, a variable such as `NODE_OPTIONS`) — and likewise a remote its rules refuse, does not refuse the document, whatever its shape:',
        'it is kept in the stored document and the export, left out of the server\'s `packages` / `remotes` (installations refuse it), and named in the',
        'result\'s `warnings`, so that exported documents import again.',
        'Remote and package-transport URLs follow the registry\'s own rule — http or https, a host, no whitespace or control characters —',
        'so `{name}` template segments (filled in from the remote\'s `variables`) and placeholders such as `?key=<YOUR_TOKEN>` are kept; remotes',
        'keep their `headers` and `variables` in the catalogue and in the export. The older shapes had no length rules: a description over',
        '100 characters is shortened in the stored document (the catalogue keeps it whole), an empty one filled with the name\'s last part, an',
        'empty package version dropped (their packages of registry type `unknown` follow the rule above).',
      ].join(' '),
      body: ImportBody,
      response: { 200: ImportAnswer },
    },
  }, async (request) => {
    const documents = documentsOf(request.body)
    if (documents.length > MAX_IMPORT_DOCUMENTS) throw tooMany(documents.length)
    const actor = requestActor(request)
    const { results, counts } = await app.services.registryImporter.importAll(documents, { userId: actor.userId, ip: actor.ip })
    return { success: true as const, data: { results, counts } }
  })

  app.get('/api/mcp/servers/:id/server.json', {
    config: { auth: policy.dual('mcp:read', { permission: 'mcp.servers.read' }) },
    schema: {
      tags, operationId: 'getMcpServerJson', summary: 'A server as an MCP Registry server.json document, by id or slug',
      description: [
        'Answers the bare document (format 2025-12-11), without this API\'s envelope, as `application/json`: the document of the server\'s latest',
        'version, else of its newest version, else of the server alone (version `0.0.0`). An imported server gives back its stored document with',
        'the catalogue\'s current description, title, website and repository URL over it. A server created here is named `<namespace>/<slug>`,',
        'the namespace being PUBLIC_URL\'s host reversed (`platform.example.com` → `com.example.platform`); its description is shortened to 100',
        'characters. 404 when unknown or not visible to the caller, like GET /api/mcp/servers/{id}.',
      ].join(' '),
      params: ServerParams,
      response: { 200: ServerJsonAnswer },
    },
  }, async (request, reply) => {
    const document = await app.services.serverJsonExporter.document(request.params.id, requestActor(request))
    // As the exporter made it: the response schema above documents the format, it does not filter it.
    return reply.type('application/json; charset=utf-8').serializer(JSON.stringify).send(document)
  })
}
