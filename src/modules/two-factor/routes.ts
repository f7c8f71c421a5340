import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { policy } from '../../auth/policies.js'
import { currentUser, userCaller } from '../../http/current-user.js'
import { OkMessage } from '../../http/envelope.js'
import { AppError, errors } from '../../http/errors.js'
import { UserEnvelope } from '../auth/schemas.js'
import { userView } from '../users/view.js'
import { challengeToken, clearChallengeCookie } from './challenge-cookie.js'
import { DisableBody, EnableBody, RecoveryCodesAnswer, SetupAnswer, UserIdParams, VerifyBody } from './schemas.js'

const tags = ['Authentication']

/** The origins the second step accepts a browser's request from. */
export interface TwoFactorRoutesOptions {
  /** Origins a browser's request may come from (http/origins.ts). */
  origins: ReadonlySet<string>
}

/** The JSON API of two-factor authentication: a user's own setup, the sign-in's second step, an admin's reset. */
export const twoFactorRoutes: FastifyPluginAsyncTypebox<TwoFactorRoutesOptions> = async (app, { origins }) => {
  const twoFactor = () => app.services.twoFactor

  app.post('/api/auth/2fa/setup', {
    config: { auth: policy.session(), twoFactorExempt: true },
    schema: {
      tags, summary: 'Start setting up two-factor authentication (TOTP)',
      description: 'Creates a new TOTP secret (160 bits, SHA-1, six digits, 30-second steps; RFC 6238), kept encrypted and not yet in force, ' +
        'and answers it once: `secret` in base32 and `otpauth_uri` for a QR code. Calling it again before enabling replaces the pending ' +
        'secret. 409 TWO_FACTOR_ALREADY_ENABLED while two-factor is on (disable it first). Stays open to an admin whom ' +
        '`global.require_2fa_for_admins` holds back.',
      response: { 200: SetupAnswer },
    },
  }, async (request) => {
    const setup = await twoFactor().enrolment.setup(await currentUser(request, app.services.users))
    return { success: true as const, message: 'Scan the QR code (or type the secret) into an authenticator app, then confirm a code with POST /api/auth/2fa/enable.', data: { secret: setup.secret, otpauth_uri: setup.otpauthUri } }
  })

  app.post('/api/auth/2fa/enable', {
    config: { auth: policy.session(), twoFactorExempt: true },
    schema: {
      tags, summary: 'Switch two-factor authentication on with a code from the pending secret',
      description: 'Checks `code` against the pending secret (one 30-second step either side of now is accepted), switches two-factor on and ' +
        'answers ten single-use recovery codes, once: only their digests are kept. 400 INVALID_TWO_FACTOR_CODE for a wrong code; 409 ' +
        'TWO_FACTOR_SETUP_REQUIRED without a pending setup; 409 TWO_FACTOR_ALREADY_ENABLED when it is on already. Stays open to an admin whom ' +
        '`global.require_2fa_for_admins` holds back.',
      body: EnableBody, response: { 200: RecoveryCodesAnswer },
    },
  }, async (request) => {
    const codes = await twoFactor().enrolment.enable(await currentUser(request, app.services.users), request.body.code, { ip: request.ip })
    return { success: true as const, message: 'Two-factor authentication is on. Keep the recovery codes somewhere safe: they are not shown again.', data: { recovery_codes: codes } }
  })

  app.post('/api/auth/2fa/disable', {
    config: { auth: policy.session(), limit: 'passwordChange' },
    schema: {
      tags, summary: 'Switch two-factor authentication off',
      description: 'Needs the password and a code: one from the authenticator app or one of the recovery codes (in `code` either way). An ' +
        'account without a password (it signs in through an identity provider only) gives the code alone. Removes the secret and every ' +
        'recovery code. A wrong password (400 INVALID_PASSWORD) or code (400 INVALID_TWO_FACTOR_CODE) counts as a failed login against the ' +
        'account\'s lockout; the failure that reaches the limit, like every call while the account is locked, answers 429 RATE_LIMITED with ' +
        'Retry-After. 409 TWO_FACTOR_NOT_ENABLED when it is off. Per IP, 20 calls a minute.',
      body: DisableBody, response: { 200: OkMessage },
    },
  }, async (request) => {
    await twoFactor().enrolment.disable(await currentUser(request, app.services.users), request.body, { ip: request.ip })
    return { success: true as const, message: 'Two-factor authentication is off.' }
  })

  app.post('/api/auth/2fa/verify', {
    config: { auth: policy.public(), limit: 'loginOrRegister' },
    schema: {
      tags, summary: 'Finish a sign-in with a code (the second step)',
      description: 'After `POST /api/auth/email/login` answered `two_factor_required: true`, with the `two_factor_challenge` cookie it set ' +
        '(HttpOnly, five minutes, single use). `code` is the authenticator app\'s current code (a code is accepted once: the same code again ' +
        'is refused), or `recovery_code` one of the recovery codes (each works once). Success: the session cookie and the user, as a login ' +
        'answers. 401 INVALID_TWO_FACTOR_CODE for a wrong code: it counts as a failed login against the account\'s lockout (10 in 15 minutes ' +
        'lock the account: 429 RATE_LIMITED with Retry-After) and the per-IP login limit; after five wrong codes the challenge ends. 401 ' +
        'UNAUTHORIZED when the challenge is missing, expired or already used: sign in with the password again. A foreign `Origin` → 403.',
      body: VerifyBody, response: { 200: UserEnvelope },
    },
  }, async (request, reply) => {
    const origin = request.headers.origin
    if (origin !== undefined && !origins.has(origin)) {
      throw new AppError(403, 'FORBIDDEN', `Cross-site request refused: it was sent from ${origin}, which is not this service.`, { origin })
    }
    const { code, recovery_code: recoveryCode } = request.body
    const proof = code !== undefined ? { kind: 'totp' as const, code: code.replace(/\s/g, '') } : { kind: 'recovery' as const, code: recoveryCode ?? '' }
    const { user, session } = await twoFactor().signIn.verify(challengeToken(request), proof, { ip: request.ip })
    clearChallengeCookie(reply, app.services.sessions.cookie)
    app.services.sessions.setCookie(reply, session.id, session.expiresAt)
    return { success: true as const, message: 'Logged in successfully.', data: { user: userView(user) } }
  })

  app.delete('/api/admin/users/:id/two-factor', {
    config: { auth: policy.session({ permission: 'users.edit' }) },
    schema: {
      tags: ['Admin'], summary: 'Switch off another user\'s two-factor authentication',
      description: 'For a user who lost both the authenticator and the recovery codes: removes their secret and recovery codes, so they sign ' +
        'in with the password alone and may set two-factor up again. Audited as `user.two_factor_disabled` with the admin as actor. 404 for ' +
        'an unknown user; 409 TWO_FACTOR_NOT_ENABLED when it is off. Not for the caller\'s own account (use POST /api/auth/2fa/disable): 409 CONFLICT.',
      params: UserIdParams, response: { 200: OkMessage },
    },
  }, async (request) => {
    const caller = userCaller(request)
    if (request.params.id === caller.userId) throw errors.conflict('CONFLICT', 'Switch your own two-factor authentication off with POST /api/auth/2fa/disable.')
    if ((await app.services.users.findById(request.params.id)) === undefined) throw errors.notFound('User')
    const reset = await twoFactor().enrolment.reset(request.params.id, { actorId: caller.userId, ip: request.ip, method: 'admin' })
    if (!reset) throw errors.conflict('TWO_FACTOR_NOT_ENABLED', 'Two-factor authentication is not on for this user.')
    return { success: true as const, message: 'Two-factor authentication is off for this user.' }
  })
}
