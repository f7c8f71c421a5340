import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { policy } from '../auth/policies.js'
import type { Config } from '../config.js'
import type { DatabaseLifecycle } from '../db/lifecycle.js'
import { ErrorBody } from './envelope.js'
import { errors } from './errors.js'
import { ownOrigins } from './origins.js'
import { installOperationIds } from './operation-ids.js'
import { setRouteDefaults } from './route-guard.js'
import type { PluginHost } from '../plugin-host/host.js'

/**
 * The version of the API contract this backend implements: it moves only when the contract does. The
 * releases of this package carry `package.json`'s version (health's `version`).
 */
export const API_VERSION = '0.20.5'

/** The document is generated from the route schemas; nothing is written by hand. */
export async function registerOpenApi(app: FastifyInstance, config: Config, plugins: PluginHost): Promise<void> {
  app.addSchema(ErrorBody)
  // After the route and plugin guards (a plugin's routes are known as its own), before the collector.
  installOperationIds(app)
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.0',
      info: {
        title: 'Service backend API',
        description:
          'Backend HTTP API of the MCP server deployment platform. Every JSON answer carries `success`; ' +
          'payloads sit under `data`, errors carry a stable `code` (see the README for the table). Every answer carries ' +
          '`X-Request-Id`.\n\nBad input is a 4xx, never a 5xx: malformed JSON → 400 `INVALID_JSON`; JSON nesting objects and arrays more than ' +
          '64 levels deep → 400 `JSON_TOO_DEEP` (refused before parsing); a schema failure, unknown ' +
          'body or query properties, a null (or any non-object) item in an array of objects, a NUL character or an unpaired UTF-16 ' +
          'surrogate in any string (body, query or path), a ' +
          'non-finite number, or a path parameter over 1 000 characters → 400 `VALIDATION_ERROR` with `details: [{field, message, in}]`; ' +
          'a malformed percent-encoding in the path → 400 `INVALID_URL`; a body over 1 MiB → 413 `PAYLOAD_TOO_LARGE`; a body ' +
          'that is not JSON → 415 `UNSUPPORTED_MEDIA_TYPE`; a request line and headers over 16 KiB → 431 `HEADERS_TOO_LARGE`; a request ' +
          'that does not arrive whole in time (30 s by default, headers 10 s) → 408 `REQUEST_TIMEOUT` and the connection closed. ' +
          'Lists take `limit` 1–100 (default 20) and `offset` 0–1 000 000 (default 0). An integer in a query string or path is ' +
          'written in decimal digits, with an optional leading `-`: `0x10`, `1e1`, `+5`, ` 5`, `5.0`, `0b1` or an empty value → 400 ' +
          '`VALIDATION_ERROR` naming the parameter. An unknown path → 404 `NOT_FOUND`; a ' +
          'known path with a method it does not serve → 405 `METHOD_NOT_ALLOWED` with an `Allow` header.\n\nFor client generators: ' +
          'every operation has a unique `operationId` (the method and the path in camelCase, `list…` for a paginated GET: ' +
          '`getUsersMe`, `listMcpServers`; a plugin\'s start with its id), and `ErrorResponse.code` lists every code the ' +
          'service answers.\n\nA database that does not answer → 503 ' +
          '`DATABASE_UNAVAILABLE`; a request arriving while the instance shuts down → 503 `SHUTTING_DOWN` (it did not run; ' +
          'send it again).\n\nExtension plugins serve their routes under `/api/plugin/{id}`, each plugin under its own tag ' +
          '`plugin:{id}`; the same envelope, validation and policies apply there. A plugin collection answers ' +
          '`data: {items, pagination}` for its list and `data: {item}` for one item, an item being the document with ' +
          '`id`, `created_at` and `updated_at`.',
        version: API_VERSION,
      },
      servers: [{ url: config.publicUrl, description: 'Development base address' }],
      components: {
        securitySchemes: {
          cookieAuth: { type: 'apiKey', in: 'cookie', name: 'auth_session', description: 'Session cookie set by login.' },
          bearerAuth: { type: 'http', scheme: 'bearer', description: 'An OAuth2 access token from POST /api/oauth2/token (authorization code with PKCE S256; metadata at /.well-known/oauth-authorization-server), carrying the scope the route names.' },
          satelliteKey: {
            type: 'http', scheme: 'bearer', bearerFormat: 'service_satkey_<secret>',
            description: "A satellite's API key, from POST /api/satellites/register (shown once). It authenticates that one satellite on the satellite routes only, and is refused (403 SATELLITE_DISABLED) while an admin has the satellite disabled.",
          },
          registrationToken: {
            type: 'http', scheme: 'bearer', bearerFormat: 'service_satellite_<global|team>_<JWT>',
            description: 'A single-use registration token from POST /api/satellites/global/registration-tokens or /api/teams/{teamId}/satellites/registration-tokens (shown once). Accepted only by POST /api/satellites/register.',
          },
          metricsToken: {
            type: 'http', scheme: 'bearer',
            description: "The Prometheus scraper's token, METRICS_TOKEN from the environment. Accepted only by GET /api/metrics; when METRICS_TOKEN is unset, no token is.",
          },
        },
      },
    },
    // A plugin that failed after adding routes is absent from the document as from the router;
    // each loaded plugin's routes sit under its own tag.
    transform: ({ schema, url, route }) => {
      const plugin = route.config?.plugin
      return { schema: plugin !== undefined && plugin.status !== 'loaded' ? { ...schema, hide: true } : schema, url }
    },
    transformObject: (document) => {
      const openapiObject = 'openapiObject' in document ? document.openapiObject : {}
      return { ...openapiObject, tags: [...(openapiObject.tags ?? []), ...plugins.tags()] }
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
  })
}

/** Swagger UI and the JSON/YAML documents, switched by `global.enable_swagger_docs`. */
export async function registerDocumentation(app: FastifyInstance, lifecycle: DatabaseLifecycle, config: Config): Promise<void> {
  await app.register(async (docs) => {
    setRouteDefaults(docs, { auth: policy.public(), beforeSetup: true })
    docs.addHook('onRequest', async () => {
      // Before setup there are no settings yet: the documentation stays available.
      if (lifecycle.ready && !(await lifecycle.current.settings.get('global.enable_swagger_docs'))) {
        throw errors.notFound('Documentation')
      }
    })
    // The page loads only its own scripts and styles, so the service-wide CSP (helmet's, without
    // upgrade-insecure-requests on plain http) fits it; no call goes to the public validator.
    await docs.register(swaggerUi, {
      routePrefix: '/documentation', uiConfig: { validatorUrl: null },
      transformSpecification: serverForLoopbackAlias(config), transformSpecificationClone: false,
    })
  })
}

/**
 * Swagger UI sends "Try it out" to the document's first server. A browser on another loopback
 * spelling of a loopback `PUBLIC_URL` (the log's 127.0.0.1 while PUBLIC_URL says localhost) is on
 * this service too: its document names that address first, so that its calls stay same-origin
 * (no CORS, the same cookies). Any other Host gets the document as it is.
 */
function serverForLoopbackAlias(config: Config) {
  const publicUrl = new URL(config.publicUrl)
  const aliases = new Set(ownOrigins(config.publicUrl).filter((origin) => origin !== publicUrl.origin))
  const basePath = publicUrl.pathname.replace(/\/+$/, '')
  return (document: Readonly<Record<string, unknown>>, request: FastifyRequest): Record<string, unknown> => {
    let origin: string
    try {
      origin = new URL(`${request.protocol}://${request.host}`).origin
    } catch {
      return document
    }
    if (!aliases.has(origin)) return document
    const servers = Array.isArray(document.servers) ? document.servers : []
    return { ...document, servers: [{ url: `${origin}${basePath}`, description: 'This address: a loopback spelling of PUBLIC_URL' }, ...servers] }
  }
}
