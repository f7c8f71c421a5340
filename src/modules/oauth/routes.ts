import formBody from '@fastify/formbody'
import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import { userCaller } from '../../auth/current-user.js'
import { SESSION_COOKIE } from '../../auth/credentials-from-request.js'
import { policy } from '../../auth/policies.js'
import type { SessionCaller } from '../../auth/sessions.js'
import { Ok } from '../../http/envelope.js'
import { AppError, oauthError } from '../../http/errors.js'
import { consentPage, errorPage, pagePolicy, signInPage } from './pages.js'
import { describeScopes } from './scopes.js'
import type { BearerCaller } from './service.js'

const tags = ['OAuth2']
const Redirect = Type.Null({ description: '302 with a Location header' })
const text = (maxLength: number, description?: string) => Type.Optional(Type.String({ maxLength, ...(description ? { description } : {}) }))

/** Protocol responses carry `success` next to the RFC fields (SPEC §2.1). */
const Protocol = <T extends Parameters<typeof Type.Object>[0]>(properties: T, description?: string) =>
  Type.Object({ success: Type.Literal(true), ...properties }, description ? { description } : {})

const AuthorizeQuery = Type.Object({
  response_type: text(64, 'Must be `code`.'),
  client_id: text(256),
  redirect_uri: text(2048, 'Exactly one of the client\'s registered redirect URIs.'),
  scope: text(1024, 'Space-separated; defaults to every scope the client may ask for.'),
  state: text(1024, 'Required; echoed in the redirect.'),
  code_challenge: text(1024, 'BASE64URL(SHA-256(code_verifier)); 43–128 characters, else an invalid_request redirect.'),
  code_challenge_method: text(16, 'Must be `S256`; `plain` is refused.'),
}, { additionalProperties: false })

const TokenBody = Type.Object({
  grant_type: text(64, '`authorization_code` or `refresh_token`'),
  client_id: text(256),
  code: text(256),
  redirect_uri: text(2048),
  code_verifier: text(256),
  refresh_token: text(256),
  scope: text(1024, 'refresh_token grant only: may narrow the granted scope, never widen it.'),
}, { additionalProperties: false })

const TokenAnswer = Protocol({
  access_token: Type.String(),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer(),
  refresh_token: Type.Optional(Type.String({ description: 'Only when offline_access is granted; rotates on every use.' })),
  scope: Type.String(),
}, 'RFC 6749 §5.1 token response')

const RevokeBody = Type.Object({
  token: text(256),
  token_type_hint: text(32, '`access_token` or `refresh_token` (a hint only).'),
  client_id: text(256),
}, { additionalProperties: false })

const IntrospectBody = Type.Object({ token: text(256), token_type_hint: text(32) }, { additionalProperties: false })

const IntrospectAnswer = Protocol({
  active: Type.Boolean(),
  scope: Type.Optional(Type.String()),
  client_id: Type.Optional(Type.String()),
  username: Type.Optional(Type.String()),
  sub: Type.Optional(Type.String()),
  exp: Type.Optional(Type.Integer()),
  iat: Type.Optional(Type.Integer()),
  team_id: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  token_type: Type.Optional(Type.String()),
  iss: Type.Optional(Type.String()),
}, 'RFC 7662 introspection response; `{active: false}` alone for unknown, expired, revoked or spent tokens')

const ConsentQuery = Type.Object({ request_id: Type.String({ minLength: 1, maxLength: 128 }) }, { additionalProperties: false })

const ConsentDetails = Ok(Type.Object({
  request_id: Type.String(),
  client_id: Type.String(),
  client_name: Type.String(),
  scopes: Type.Array(Type.Object({ name: Type.String(), description: Type.String() })),
  teams: Type.Array(Type.Object({ id: Type.String(), name: Type.String() })),
  csrf_token: Type.Union([Type.String(), Type.Null()]),
  signed_in: Type.Boolean(),
}), 'With `Accept: application/json`; otherwise the HTML sign-in or consent page')

const ConsentBody = Type.Object({
  request_id: Type.String({ minLength: 1, maxLength: 128 }),
  decision: Type.Union([Type.Literal('approve'), Type.Literal('deny')]),
  team_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  csrf_token: Type.String({ minLength: 1, maxLength: 128 }),
}, { additionalProperties: false })

const ConsentLoginBody = Type.Object({
  request_id: Type.String({ minLength: 1, maxLength: 128 }),
  login: Type.String({ minLength: 1, maxLength: 255 }),
  password: Type.String({ minLength: 1, maxLength: 1024 }),
}, { additionalProperties: false })

const RegisterBody = Type.Object({
  redirect_uris: Type.Array(Type.String({ minLength: 1, maxLength: 2048 }), { minItems: 1, maxItems: 10 }),
  client_name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  scope: text(1024),
  grant_types: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { maxItems: 5 })),
  response_types: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { maxItems: 5 })),
  token_endpoint_auth_method: text(64, 'Only `none`: every client is public and uses PKCE.'),
}, { additionalProperties: false })

const RegisterAnswer = Protocol({
  client_id: Type.String(),
  client_id_issued_at: Type.Integer(),
  client_name: Type.String(),
  redirect_uris: Type.Array(Type.String()),
  grant_types: Type.Array(Type.String()),
  response_types: Type.Array(Type.String()),
  token_endpoint_auth_method: Type.String(),
  scope: Type.String(),
}, 'RFC 7591 client information response')

const wantsJson = (request: FastifyRequest) => (request.headers.accept ?? '').includes('application/json')

/** The first failing field of a validation error, as one line for `error_description`. */
function describeValidation(error: Error & { validation?: Array<{ instancePath?: string; message?: string; params?: Record<string, unknown> }> }): string {
  const first = error.validation?.[0]
  if (first === undefined) return error.message
  const extra = first.params?.additionalProperty
  if (typeof extra === 'string') return `Unknown parameter: ${extra}.`
  const field = first.instancePath?.replace(/^\//, '') || 'request'
  return `${field} ${first.message ?? 'is invalid'}.`
}

/**
 * SPEC §4.8: the authorization server for the command-line client. Protocol endpoints take
 * form-encoded bodies as well as JSON (RFC 6749 requires the former) and answer RFC errors.
 */
export const oauthRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const oauth = () => app.services.oauth

  /** The browser's session, if its cookie is valid (public routes that adapt to a signed-in user). */
  async function optionalSession(request: FastifyRequest, reply: FastifyReply): Promise<SessionCaller | null> {
    const id = request.cookies[SESSION_COOKIE]
    const session = id ? await app.services.sessions.verify(id) : null
    if (id && session?.renewedUntil !== undefined) app.services.sessions.setCookie(reply, id, session.renewedUntil)
    return session
  }

  function sendPage(reply: FastifyReply, status: number, html: string, formTargets: readonly string[] = []): FastifyReply {
    return reply
      .code(status)
      .type('text/html; charset=utf-8')
      .header('content-security-policy', pagePolicy(formTargets))
      // Not helmet's no-referrer: under it browsers send `Origin: null` on the page's own form
      // posts, which the Origin checks must refuse. same-origin still tells the client nothing.
      .header('referrer-policy', 'same-origin')
      .header('cache-control', 'no-store')
      .send(html)
  }

  /** HTML for a browser, the JSON envelope for everyone else. */
  function failPage(request: FastifyRequest, reply: FastifyReply, error: unknown): FastifyReply {
    if (!(error instanceof AppError) || wantsJson(request)) throw error
    return sendPage(reply, error.statusCode, errorPage('Authorization failed', error.message))
  }

  async function providerHref(requestId: string): Promise<string | undefined> {
    const { enabled, configured } = await app.services.providerLogin.status()
    if (!enabled || !configured) return undefined
    return `/api/auth/provider/login?return_to=${encodeURIComponent(`/api/oauth2/consent?request_id=${requestId}`)}`
  }

  const redirectOrigin = (url: string) => new URL(url).origin

  await app.register(async (instance) => {
    const protocol = instance.withTypeProvider<TypeBoxTypeProvider>()
    // Form bodies only here: everywhere else stays JSON-only (SPEC §2.2).
    await protocol.register(formBody, { bodyLimit: 64 * 1024 })

    protocol.post('/api/oauth2/token', {
      config: { auth: policy.public(), limit: 'token', oauthErrors: {} },
      attachValidation: true,
      schema: {
        tags, summary: 'Token endpoint: authorization code or refresh token grant',
        description: 'Form-encoded or JSON. `grant_type=authorization_code` needs `code, redirect_uri, client_id, code_verifier`; ' +
          '`grant_type=refresh_token` needs `refresh_token, client_id` and may narrow `scope`. Refresh tokens rotate: presenting a used one ' +
          'revokes every token of its authorization. A code used twice revokes the tokens issued from it. Errors per RFC 6749 §5.2 ' +
          '(`invalid_request`, `invalid_client` 401, `invalid_grant`, `unauthorized_client`, `unsupported_grant_type`, `invalid_scope`); ' +
          '403 `access_denied` / LOGIN_DISABLED while login is off. Always `Cache-Control: no-store`.',
        consumes: ['application/x-www-form-urlencoded', 'application/json'],
        body: TokenBody,
        response: { 200: TokenAnswer },
      },
      onRequest: (_request, reply, done) => {
        reply.header('cache-control', 'no-store').header('pragma', 'no-cache')
        done()
      },
    }, async (request) => {
      if (request.validationError) throw oauthError(400, 'invalid_request', describeValidation(request.validationError))
      return { success: true as const, ...(await oauth().token(request.body, { ip: request.ip })) }
    })

    protocol.post('/api/oauth2/revoke', {
      config: { auth: policy.public(), limit: 'token', oauthErrors: {} },
      attachValidation: true,
      schema: {
        tags, summary: 'Revoke an access or refresh token (RFC 7009)',
        description: 'Always 200 for any token string: unknown, already revoked or another client\'s tokens change nothing. ' +
          'Revoking a refresh token revokes its whole authorization (every access and refresh token issued from it).',
        consumes: ['application/x-www-form-urlencoded', 'application/json'],
        body: RevokeBody,
        response: { 200: Protocol({}) },
      },
    }, async (request) => {
      if (request.validationError) throw oauthError(400, 'invalid_request', describeValidation(request.validationError))
      await oauth().revoke(request.body, { ip: request.ip })
      return { success: true as const }
    })

    protocol.post('/api/oauth2/introspect', {
      config: { auth: policy.satellite({ orAdminSession: true }), oauthErrors: { unauthorized: 'invalid_token' } },
      attachValidation: true,
      schema: {
        tags, summary: 'Introspect a token (RFC 7662)',
        description: 'For a satellite (its API key) or a global admin (session). Answers `{active: false}` for unknown, expired, revoked or spent tokens.',
        consumes: ['application/x-www-form-urlencoded', 'application/json'],
        body: IntrospectBody,
        response: { 200: IntrospectAnswer },
      },
    }, async (request) => {
      if (request.validationError) throw oauthError(400, 'invalid_request', describeValidation(request.validationError))
      if (request.body.token === undefined) throw oauthError(400, 'invalid_request', 'token is required.')
      return { success: true as const, ...(await oauth().introspect(request.body.token)) } as { success: true; active: boolean }
    })

    protocol.post('/api/oauth2/consent', {
      config: { auth: policy.session() },
      schema: {
        tags, summary: 'Approve or deny an authorization request',
        description: 'Form-encoded (the consent page) or JSON (a separate frontend). The session must be the one that saw the request, and ' +
          '`csrf_token` the one the consent page (or its JSON variant) gave. Approve → 302 (form) or 200 `data.redirect_url` (JSON) to ' +
          '`redirect_uri?code=…&state=…&iss=…`; deny → `error=access_denied`. 403 INVALID_CSRF_TOKEN, 400 INVALID_TEAM, 404 for an unknown, ' +
          'expired or already decided request. The approval is remembered per user and client.',
        consumes: ['application/x-www-form-urlencoded', 'application/json'],
        body: ConsentBody,
        response: { 200: Ok(Type.Object({ redirect_url: Type.String() })), 302: Redirect },
      },
    }, async (request, reply) => {
      const form = request.headers['content-type']?.startsWith('application/x-www-form-urlencoded') === true
      let url: string
      try {
        url = await oauth().decide(request.body, userCaller(request) as SessionCaller)
      } catch (error) {
        if (!form) throw error
        return failPage(request, reply, error)
      }
      if (form) return reply.redirect(url, 302)
      return { success: true as const, data: { redirect_url: url } }
    })

    protocol.post('/api/oauth2/consent/login', {
      config: { auth: policy.public(), limit: 'loginOrRegister' },
      schema: {
        tags, summary: 'Sign in from the consent page',
        description: 'The consent page\'s sign-in form (form-encoded; JSON also accepted). Success: session cookie and 303 back to the consent page. ' +
          'Failure: the sign-in page again with the reason (401 INVALID_CREDENTIALS, 403 LOGIN_DISABLED or EMAIL_NOT_VERIFIED, 429). ' +
          'An `Origin` header, when sent, must be this service\'s own (or a configured CORS origin).',
        consumes: ['application/x-www-form-urlencoded', 'application/json'],
        body: ConsentLoginBody,
        response: { 303: Redirect },
      },
    }, async (request, reply) => {
      const { request_id: requestId, login, password } = request.body
      const origin = request.headers.origin
      if (origin !== undefined && !oauth().isAllowedOrigin(origin)) {
        throw new AppError(403, 'FORBIDDEN', 'Cross-site sign-in refused: its Origin is not allowed.', { origin })
      }
      let clientName: string
      try {
        clientName = (await oauth().consentView(requestId, null)).client.name
      } catch (error) {
        return failPage(request, reply, error)
      }
      try {
        const { session } = await app.services.accounts.login(login, password, { ip: request.ip })
        await oauth().adoptRequest(requestId, session.rowId)
        app.services.sessions.setCookie(reply, session.id, session.expiresAt)
      } catch (error) {
        if (!(error instanceof AppError) || wantsJson(request)) throw error
        if (error.headers) reply.headers(error.headers)
        return sendPage(reply, error.statusCode, signInPage({
          clientName, requestId, error: error.message, login, providerHref: await providerHref(requestId),
        }))
      }
      return reply.redirect(`/api/oauth2/consent?request_id=${encodeURIComponent(requestId)}`, 303)
    })
  })

  app.get('/api/oauth2/auth', {
    config: { auth: policy.public(), oauthErrors: {} },
    attachValidation: true,
    schema: {
      tags, summary: 'Authorization endpoint (authorization code with PKCE S256)',
      description: 'An unknown client or a redirect URI not registered for it → 400 (HTML page, or JSON with `Accept: application/json`), never a redirect. ' +
        'Other errors redirect to the client with `error`, `error_description`, `state` and `iss` (RFC 9207): `invalid_request` (missing state or PKCE, ' +
        '`plain`), `unsupported_response_type`, `invalid_scope`, `access_denied` while login is off. A valid request is stored (10 minutes) and the ' +
        'browser goes to the consent page — or straight back to the client with a code when this user already approved these scopes for it. ' +
        'Unknown query parameters are refused (400) like everywhere in this API.',
      querystring: AuthorizeQuery,
      response: { 302: Redirect },
    },
  }, async (request, reply) => {
    try {
      if (request.validationError) throw oauthError(400, 'invalid_request', describeValidation(request.validationError), 'VALIDATION_ERROR')
      const location = await oauth().authorize(request.query, await optionalSession(request, reply))
      return reply.redirect(location, 302)
    } catch (error) {
      return failPage(request, reply, error)
    }
  })

  app.get('/api/oauth2/consent', {
    config: { auth: policy.public() },
    schema: {
      tags, summary: 'The consent page (HTML), or its details as JSON',
      description: 'HTML by default: a sign-in form when the browser has no session, else the client, the scopes in plain words, a team choice and ' +
        'Approve / Deny, under a strict Content-Security-Policy. With `Accept: application/json`, the same details for a separate frontend. ' +
        'A signed-in browser binds the request to its session; a remembered consent redirects straight to the client with a code.',
      querystring: ConsentQuery,
      response: { 200: ConsentDetails, 302: Redirect },
    },
  }, async (request, reply) => {
    const session = await optionalSession(request, reply)
    const requestId = request.query.request_id
    let view
    try {
      view = await oauth().consentView(requestId, session)
    } catch (error) {
      return failPage(request, reply, error)
    }
    const { client, scopes, teams, csrfToken } = view
    if (wantsJson(request)) {
      return {
        success: true as const,
        data: {
          request_id: requestId, client_id: client.id, client_name: client.name, scopes: describeScopes(scopes),
          teams, csrf_token: csrfToken, signed_in: session !== null,
        },
      }
    }
    if (session === null || csrfToken === null) {
      return sendPage(reply, 200, signInPage({ clientName: client.name, requestId, providerHref: await providerHref(requestId) }))
    }
    const remembered = await oauth().rememberedApproval(view.request, session)
    if (remembered !== null) return reply.redirect(remembered, 302)
    return sendPage(reply, 200, consentPage({
      clientName: client.name, clientId: client.id, requestId, csrfToken, username: session.user.username, scopes, teams,
    }), [redirectOrigin(view.request.redirectUri)])
  })

  app.get('/api/oauth2/userinfo', {
    config: { auth: policy.bearer('user:read'), oauthErrors: { unauthorized: 'invalid_token' } },
    schema: {
      tags, summary: 'The signed-in user, for an access token with user:read',
      description: 'Bearer only (a session cookie is refused). Fields at the top level, as OpenID Connect clients expect.',
      response: {
        200: Protocol({
          sub: Type.String(), email: Type.String(), email_verified: Type.Boolean(), preferred_username: Type.String(), name: Type.String(),
        }),
      },
    },
  }, async (request) => ({ success: true as const, ...oauth().userinfo((userCaller(request) as BearerCaller).user) }))

  app.post('/api/oauth2/register', {
    config: { auth: policy.public(), limit: 'clientRegistration', oauthErrors: { invalid: 'invalid_client_metadata' } },
    attachValidation: true,
    schema: {
      tags, summary: 'Register a public client (RFC 7591)',
      description: 'JSON. Clients are public and PKCE-only; redirect URIs must be https, or http on a loopback host (localhost, 127.0.0.1, [::1]), ' +
        'without a fragment (else `invalid_redirect_uri`). Other bad metadata → `invalid_client_metadata`. Rate-limited per IP.',
      body: RegisterBody,
      response: { 201: RegisterAnswer },
    },
  }, async (request, reply) => {
    if (request.validationError) throw oauthError(400, 'invalid_client_metadata', describeValidation(request.validationError))
    return reply.code(201).send({ success: true as const, ...(await oauth().register(request.body, { ip: request.ip })) })
  })

  app.get('/.well-known/oauth-authorization-server', {
    config: { auth: policy.public() },
    schema: {
      tags, summary: 'Authorization server metadata (RFC 8414)',
      response: { 200: Type.Object({ success: Type.Literal(true) }, { additionalProperties: true, description: 'RFC 8414 metadata; issuer = PUBLIC_URL' }) },
    },
  }, async () => ({ success: true as const, ...oauth().metadata() }))
}
