import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { policy } from '../auth/policies.js'
import type { Config } from '../config.js'
import type { DatabaseLifecycle } from './lifecycle.js'
import { ErrorBody } from '../http/envelope.js'
import { errors } from '../http/errors.js'
import { ownOrigins } from '../http/origins.js'
import { installOperationIds } from '../http/operation-ids.js'
import { setRouteDefaults } from '../http/route-guard.js'
import type { PluginHost } from '../plugin-host/host.js'

/**
 * The version of the API contract this backend implements: it moves only when the contract does. The
 * releases of this package carry `package.json`'s version (health's `version`).
 */
export const API_VERSION = '0.20.5'

/**
 * The tags of the core routes, in the order the explorer shows them, each with one line saying
 * what it groups. Every tag an operation uses must be listed (a test walks the document); the
 * plugin host adds one tag per loaded plugin after these.
 */
const CORE_TAGS = [
  { name: 'System', description: 'The landing page, the liveness and readiness probes, and the Prometheus metrics.' },
  { name: 'Authentication', description: 'Email registration and login, logout, email verification, password reset and change, the profile, and the account pages the backend serves when there is no frontend.' },
  { name: 'Provider login', description: 'Sign-in through the GitHub-compatible identity provider: whether it is on, the redirect to the provider, and its callback.' },
  { name: 'OpenID Connect sign-in', description: 'Sign-in through an OpenID Connect issuer (Keycloak, Entra ID, Okta, Google …): whether it is offered, the redirect to the issuer, and its callback.' },
  { name: 'Users', description: "The caller's own profile, account facts and teams; a session, or a bearer token with user:read, account:read or teams:read." },
  { name: 'Teams', description: 'Teams, their members and team roles, and ownership transfer; a team the caller is not a member of answers 404.' },
  { name: 'OAuth2', description: 'The OAuth 2.0 authorization server: metadata, authorization with PKCE, the consent page, tokens, revocation, introspection, client registration and userinfo.' },
  { name: 'MCP Catalogue', description: 'MCP servers, their versions and categories; search, server.json import and export, and the sync from an upstream MCP registry.' },
  { name: 'MCP Registry', description: "The catalogue served read-only in the official MCP Registry's API (v0 and v0.1), for registry clients." },
  { name: 'MCP Installations', description: "What a team runs: a catalogue server at a version with its configuration, placed on a satellite; the team's values, each member's own values, and what the command-line client reads (endpoints, never credentials)." },
  { name: 'Connections', description: "Accounts at OAuth-protected remote MCP servers, connected by each member (or once for the team) through the server's own authorization server; this service's registrations there. Never a token in an answer." },
  { name: 'Satellites', description: 'Registration tokens, pairing and heartbeats of the satellites that run MCP servers, and their management by admins.' },
  { name: 'Settings', description: 'Global settings by group (global admins): the login and registration switches, team limits, mail, the identity provider, the catalogue.' },
  { name: 'Admin', description: 'Global administration: users and their global roles, the role table, the audit log, extension plugins and a test mail.' },
  { name: 'Database', description: 'Whether the database is configured, and setting it up while the service runs in setup mode.' },
  { name: 'Personal access tokens', description: "Users' long-lived bearer tokens for scripts and CI (`service_pat_…`): created with a session and shown once, accepted like OAuth access tokens (scopes, team binding) on the routes that take a bearer token; global admins list and delete anyone's." },
] as const

/**
 * The API's description on the explorer's first screen: how to call a route from this page, the
 * conventions in short, and where the full documentation lives. Swagger UI resolves a relative
 * link against its own page, so the docs are named by their path in the repository, not linked.
 */
const API_DESCRIPTION = [
  'The HTTP API of the MCP server deployment platform: accounts and teams, the MCP server catalogue, satellites, global ' +
    'settings, and the OAuth 2.0 authorization server.',
  '**Trying a route from this page.** "Try it out" sends the request from this browser to the server chosen below. ' +
    'To act as a user, run `POST /api/auth/email/login` (or `POST /api/auth/email/register`: the first account becomes the global ' +
    'admin) here first: its answer sets the `auth_session` cookie in this browser, and every later call from this page carries it ' +
    '(`POST /api/auth/logout` ends it). To use an OAuth access token instead (from the CLI\'s sign-in, or `POST /api/oauth2/token`), ' +
    'open "Authorize" and paste it under `bearerAuth`; satellite keys, registration tokens and the metrics token go under their own schemes there.',
  '**Conventions.** Every JSON answer carries `success`; payloads sit under `data`, errors carry a stable `code` (the enum of ' +
    '`ErrorResponse.code`), a text in `error` and sometimes `details`. Every answer carries `X-Request-Id`. Bad input is a 4xx, never a ' +
    '5xx: malformed JSON → 400 `INVALID_JSON`; nesting deeper than 64 levels → 400 `JSON_TOO_DEEP`; a schema failure, an unknown body ' +
    'or query property, a null (or other non-object) item in an array of objects, a NUL character or an unpaired UTF-16 surrogate in any ' +
    'string, a non-finite number or a path parameter over 1 000 characters → 400 `VALIDATION_ERROR` with `details: [{field, message, in}]`; ' +
    'an integer in a query string or path must be decimal digits with an optional leading `-` (`0x10`, `1e1`, `+5`, `5.0` → 400); a malformed ' +
    'percent-encoding in the path → 400 `INVALID_URL`; a body over 1 MiB → 413 `PAYLOAD_TOO_LARGE`; a body that is not JSON → 415 ' +
    '`UNSUPPORTED_MEDIA_TYPE`; headers over 16 KiB → 431 `HEADERS_TOO_LARGE`; a request that does not arrive whole in time → 408 ' +
    '`REQUEST_TIMEOUT`. Lists take `limit` 1–100 (default 20) and `offset` 0–1 000 000. An unknown path → 404 `NOT_FOUND`; a known path ' +
    'with another method → 405 `METHOD_NOT_ALLOWED` with `Allow`. A database that does not answer → 503 `DATABASE_UNAVAILABLE`; a request ' +
    'arriving while the instance shuts down → 503 `SHUTTING_DOWN` (it did not run; send it again).',
  '**For client generators.** Every operation has a unique `operationId` (the method and the path in camelCase, `list…` for a ' +
    'paginated GET: `getUsersMe`, `listMcpServers`; a plugin\'s start with its id).',
  '**Extension plugins** serve their routes under `/api/plugin/{id}`, each plugin under its own tag `plugin:{id}`, with the same ' +
    'envelope, validation and policies. A plugin collection answers `data: {items, pagination}` for its list and `data: {item}` for one ' +
    'item, an item being the document with `id`, `created_at` and `updated_at`.',
  '**Documentation.** The `docs/` folder of the service\'s source repository explains each part: `docs/api.md` (conventions, every ' +
    'error code, authentication, this explorer), `docs/accounts.md`, `docs/teams.md`, `docs/oauth.md`, `docs/catalogue.md`, ' +
    '`docs/registry.md`, `docs/satellites.md`, `docs/plugins.md` and, for operators, `docs/operations.md`.',
].join('\n\n')

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
        description: API_DESCRIPTION,
        version: API_VERSION,
      },
      servers: [{ url: config.publicUrl, description: "The service's public base URL (PUBLIC_URL)" }],
      tags: [...CORE_TAGS],
      components: {
        securitySchemes: {
          cookieAuth: {
            type: 'apiKey', in: 'cookie', name: 'auth_session',
            description: 'The session cookie, set in this browser by POST /api/auth/email/login or /api/auth/email/register (or the sign-in page). ' +
              'A value typed here is not sent: a page cannot set the Cookie header, so sign in through the login route instead.',
          },
          bearerAuth: { type: 'http', scheme: 'bearer', description: 'An OAuth2 access token from POST /api/oauth2/token (authorization code with PKCE S256; metadata at /.well-known/oauth-authorization-server), carrying the scope the route names, ' +
            'or a personal access token (`service_pat_…`, from POST /api/users/me/tokens) with that scope: the same scope and team rules apply. /api/oauth2/userinfo takes access tokens only.' },
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
