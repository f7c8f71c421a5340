import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { policy } from '../../auth/policies.js'
import { Ok } from '../../http/envelope.js'
import { SIGN_IN_LINK } from '../auth/page-links.js'
import { CALLBACK_PATH } from './service.js'

const tags = ['OpenID Connect sign-in']
const STATE_COOKIE = 'oidc_state'
const STATE_PATH = '/api/auth/oidc'
/** The state lives 10 minutes. */
const STATE_MAX_AGE_S = 600

const Redirect = Type.Null({ description: '302 with a Location header' })
/** A browser's refusals on these routes are pages (see htmlRefusals) that end with this. */
const HTML_REFUSALS = { hint: 'Go back to the sign-in page and start again.', links: [SIGN_IN_LINK] }
const FOR_BROWSERS = 'A browser (`Accept` preferring text/html) gets its refusals as an HTML page with the same status; other callers get the JSON envelope.'

/** The authorization response (RFC 6749 §4.1.2, §4.1.2.1; RFC 9207 `iss`). */
const CallbackQuery = Type.Object({
  code: Type.Optional(Type.String({ maxLength: 4096 })),
  state: Type.Optional(Type.String({ maxLength: 512 })),
  iss: Type.Optional(Type.String({ maxLength: 2048 })),
  error: Type.Optional(Type.String({ maxLength: 256 })),
  error_description: Type.Optional(Type.String({ maxLength: 2048 })),
  error_uri: Type.Optional(Type.String({ maxLength: 2048 })),
}, { additionalProperties: true, description: 'The authorization response; other parameters (session_state, Google\'s authuser, …) are ignored (RFC 6749 §4.1.2).' })
const KNOWN = ['code', 'state', 'iss', 'error', 'error_description', 'error_uri'] as const

/** Sign-in with an OpenID Connect issuer: status, the redirect to the issuer, and its way back. */
export const oidcLoginRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const oidc = () => app.services.oidcLogin
  const cookie = () => app.services.sessions.cookie

  app.get('/api/auth/oidc/status', {
    config: { auth: policy.public() },
    schema: {
      tags, summary: 'Whether OpenID Connect sign-in is offered, and what its button says',
      description: '`enabled` is true only while `oidc.enabled` is on and an issuer, a client id and a client secret are set. ' +
        '`display_name` completes "Sign in with …".',
      response: { 200: Ok(Type.Object({ enabled: Type.Boolean(), display_name: Type.String() })) },
    },
  }, async () => ({ success: true as const, data: await oidc().status() }))

  app.get('/api/auth/oidc/login', {
    config: { auth: policy.public(), limit: 'loginOrRegister', htmlRefusals: HTML_REFUSALS },
    schema: {
      tags, summary: 'Start OpenID Connect sign-in (redirects to the issuer)',
      description: '403 LOGIN_DISABLED, or 403 OIDC_DISABLED while OpenID Connect sign-in is off or not configured; 502 OIDC_LOGIN_FAILED when the ' +
        'issuer\'s discovery document cannot be read (kept five minutes once read). Else a random `state`, `nonce` and PKCE code verifier are kept ' +
        'server-side for ten minutes, single use, so the callback may land on any instance; the state also goes into a short-lived HttpOnly cookie ' +
        '(`oidc_state`, path `/api/auth/oidc`) that binds the sign-in to this browser; and 302 to the issuer\'s authorization endpoint ' +
        '(authorization code, S256, the `oidc.scope`, redirect URI `<PUBLIC_URL>/api/auth/oidc/callback`). `return_to` follows the provider ' +
        'sign-in\'s rule: kept only when it is a path on this service or a URL on `global.page_url`\'s origin. Counts against the per-IP login limit. ' +
        FOR_BROWSERS,
      querystring: Type.Object({ return_to: Type.Optional(Type.String({ maxLength: 2048 })) }, { additionalProperties: false }),
      response: { 302: Redirect },
    },
  }, async (request, reply) => {
    const { url, state } = await oidc().start(request.query.return_to)
    reply.setCookie(STATE_COOKIE, state, { ...cookie(), path: STATE_PATH, maxAge: STATE_MAX_AGE_S })
    return reply.redirect(url, 302)
  })

  app.get(CALLBACK_PATH, {
    config: { auth: policy.public(), limit: 'loginOrRegister', unknownParameters: 'ignore', htmlRefusals: HTML_REFUSALS },
    schema: {
      tags, summary: 'The OpenID Connect issuer sends the browser back here',
      description: [
        '400 OIDC_STATE_MISMATCH when the `state` is not this browser\'s (the cookie) or not one the service holds (unknown, used once already, expired,',
        'or the issuer setting changed since). An `error` from the issuer → 400 OIDC_LOGIN_FAILED naming it. The code is exchanged at the issuer\'s token',
        'endpoint with the client secret (client_secret_basic, or client_secret_post when that is all the issuer takes) and the PKCE verifier; the ID token',
        'must be signed by a key of the issuer\'s JWKS and carry this issuer, this client, an unexpired `exp` and the sign-in\'s `nonce`, else',
        '400 OIDC_ID_TOKEN_INVALID. The email is taken only when the issuer vouches for it (`email_verified` true, from the ID token, else userinfo),',
        'else 400 OIDC_EMAIL_NOT_AVAILABLE. Then: the account linked to this issuer and subject signs in; else the account with this verified email is',
        'linked; an account whose email was never verified becomes the issuer\'s verified owner\'s, and its password, sessions, grants and pending links',
        'end; else 403 FIRST_USER_REQUIRES_EMAIL while no user exists; else a new global_user with a default team. 409 OIDC_ALREADY_LINKED when the',
        'email\'s account is linked to another subject at this issuer; 403 LOGIN_DISABLED / OIDC_DISABLED; 502 OIDC_LOGIN_FAILED when the issuer',
        'cannot be read. Success: the session cookie and 302 to `return_to` (checked again) or `global.page_url`. The issuer\'s tokens are used once and',
        'never stored or logged. Other parameters are ignored (RFC 6749 §4.1.2).', FOR_BROWSERS,
      ].join(' '),
      querystring: CallbackQuery,
      response: { 302: Redirect },
    },
  }, async (request, reply) => {
    // Single use: whatever happens next, this state is spent (here and in the database).
    reply.setCookie(STATE_COOKIE, '', { ...cookie(), path: STATE_PATH, maxAge: 0 })
    const query = request.query as Record<string, unknown>
    const parameters = new URLSearchParams()
    for (const name of KNOWN) if (typeof query[name] === 'string') parameters.set(name, query[name])
    const { user, session, returnTo } = await oidc().complete({ parameters, expectedState: request.cookies[STATE_COOKIE], ip: request.ip })
    app.services.sessions.setCookie(reply, session.id, session.expiresAt)
    request.log.info({ user_id: user.id }, 'OpenID Connect sign-in')
    return reply.redirect(await oidc().landing(returnTo), 302)
  })
}

