import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply } from 'fastify'
import { Type } from 'typebox'
import { policy } from '../../auth/policies.js'
import { Ok } from '../../http/envelope.js'

const tags = ['Provider login']
const STATE_COOKIE = 'provider_oauth_state'
const STATE_PATH = '/api/auth/provider'
/** The state lives 10 minutes. */
const STATE_MAX_AGE_S = 600

const Redirect = Type.Null({ description: '302 with a Location header' })
/** A browser's refusals on these routes are pages (see htmlRefusals) that end with this. */
const SIGN_IN_AGAIN = 'Go back to where you started and sign in again.'

/** Sign-in with the identity provider. */
export const providerLoginRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const provider = () => app.services.providerLogin
  const cookie = () => app.services.sessions.cookie
  const clearState = (reply: FastifyReply) => reply.setCookie(STATE_COOKIE, '', { ...cookie(), path: STATE_PATH, maxAge: 0 })

  app.get('/api/auth/provider/status', {
    config: { auth: policy.public() },
    schema: {
      tags, summary: 'Whether provider sign-in is enabled and configured',
      response: { 200: Ok(Type.Object({ enabled: Type.Boolean(), configured: Type.Boolean({ description: 'A client id and secret are set.' }) })) },
    },
  }, async () => ({ success: true as const, data: await provider().status() }))

  app.get('/api/auth/provider/login', {
    config: { auth: policy.public(), limit: 'loginOrRegister', htmlRefusals: { hint: SIGN_IN_AGAIN } },
    schema: {
      tags, summary: 'Start provider sign-in (redirects to the identity provider)',
      description: '403 LOGIN_DISABLED or PROVIDER_OAUTH_DISABLED. `return_to` is kept only when it is a path on this service or a URL on `global.page_url`\'s origin, ' +
        'resolved as a browser would (WHATWG URL) and compared by origin; a value with a control character, a space or other whitespace is dropped ' +
        '(browsers strip TAB, CR and LF, which would turn `/<TAB>/host` into `//host`). A dropped value means landing on `global.page_url`. ' +
        'A browser (`Accept` preferring text/html) gets its refusals as an HTML page with the same status.',
      querystring: Type.Object({ return_to: Type.Optional(Type.String({ maxLength: 2048 })) }, { additionalProperties: false }),
      response: { 302: Redirect },
    },
  }, async (request, reply) => {
    const { url, state } = await provider().start(request.query.return_to)
    reply.setCookie(STATE_COOKIE, state, { ...cookie(), path: STATE_PATH, maxAge: STATE_MAX_AGE_S })
    return reply.redirect(url, 302)
  })

  app.get('/api/auth/provider/callback', {
    config: { auth: policy.public(), limit: 'loginOrRegister', htmlRefusals: { hint: SIGN_IN_AGAIN } },
    schema: {
      tags, summary: 'The identity provider returns here',
      description: '400 PROVIDER_STATE_MISMATCH, 400 PROVIDER_EMAIL_NOT_AVAILABLE, 403 FIRST_USER_REQUIRES_EMAIL, 400/502 PROVIDER_OAUTH_FAILED. Success: session cookie and 302 to `return_to` (checked again here) or `global.page_url`. ' +
        'A browser (`Accept` preferring text/html) gets its refusals as an HTML page with the same status.',
      querystring: Type.Object({
        code: Type.Optional(Type.String({ maxLength: 512 })),
        state: Type.Optional(Type.String({ maxLength: 512 })),
        error: Type.Optional(Type.String({ maxLength: 256 })),
        error_description: Type.Optional(Type.String({ maxLength: 1024 })),
        error_uri: Type.Optional(Type.String({ maxLength: 2048 })),
      }, { additionalProperties: false }),
      response: { 302: Redirect },
    },
  }, async (request, reply) => {
    // Single use: whatever happens next, this state is spent (here and in the database).
    clearState(reply)
    const { user, session, returnTo } = await provider().complete({
      code: request.query.code,
      state: request.query.state,
      expectedState: request.cookies[STATE_COOKIE],
      providerError: request.query.error,
      ip: request.ip,
    })
    app.services.sessions.setCookie(reply, session.id, session.expiresAt)
    request.log.info({ user_id: user.id }, 'provider sign-in')
    return reply.redirect(await provider().landing(returnTo), 302)
  })
}
