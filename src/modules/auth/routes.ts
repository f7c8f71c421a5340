import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { currentUser } from '../../http/current-user.js'
import { policy } from '../../auth/policies.js'
import { SESSION_COOKIE } from '../../auth/credentials-from-request.js'
import { userView } from '../users/view.js'
import { setChallengeCookie } from '../two-factor/challenge-cookie.js'
import { TwoFactorRequired } from '../two-factor/schemas.js'
import { Type } from 'typebox'
import { Ok } from '../../http/envelope.js'
import { UserView } from '../users/schemas.js'
import { emailLinkRoutes } from './link-routes.js'
import { ChangePasswordBody, EmailBody, LoginBody, Message, ProfileBody, RegisterBody, UserEnvelope } from './schemas.js'

const tags = ['Authentication']
const publicRoute = { auth: policy.public() }
const SAME_ANSWER = 'If an account with this email exists, a mail is on its way.'

export interface AuthRoutesOptions {
  /** Origins a browser's form may come from (http/origins.ts). */
  origins: ReadonlySet<string>
  /** The key of the reset form's CSRF tokens. */
  formKey: Buffer
}

/** Email registration, login, logout, verification, reset, password and profile. */
export const authRoutes: FastifyPluginAsyncTypebox<AuthRoutesOptions> = async (app, { origins, formKey }) => {
  // The links in mails, in a context of their own: only there are form bodies accepted.
  await app.register(emailLinkRoutes, { origins, formKey })

  app.post('/api/auth/email/register', {
    config: { ...publicRoute, limit: 'loginOrRegister' },
    schema: {
      tags, summary: 'Register with email and password',
      description: 'The first user ever becomes global_admin with a verified email. Starts a session unless email verification is required and pending.',
      body: RegisterBody, response: { 201: UserEnvelope },
    },
  }, async (request, reply) => {
    const { user, session, pending } = await app.services.accounts.register(request.body, { ip: request.ip, requestId: request.id })
    if (session) app.services.sessions.setCookie(reply, session.id, session.expiresAt)
    return reply.code(201).send({
      success: true as const,
      message: pending ? 'Registered. Check your email to verify your address before logging in.' : 'Registered successfully.',
      data: { user: userView(user) },
    })
  })

  app.post('/api/auth/email/login', {
    config: { ...publicRoute, limit: 'loginOrRegister' },
    schema: {
      tags, summary: 'Log in with email or username and password',
      description: 'Success: the session cookie and the user. For an account with two-factor authentication on, a right password answers ' +
        '`data: {two_factor_required: true}` instead, with no session: only a `two_factor_challenge` cookie (HttpOnly, SameSite=Lax, ' +
        'Path=/api/auth, five minutes); `POST /api/auth/2fa/verify` with a code then starts the session.',
      body: LoginBody, response: { 200: Ok(Type.Union([Type.Object({ user: UserView }, { additionalProperties: false }), TwoFactorRequired])) },
    },
  }, async (request, reply) => {
    const { user, session, challenge } = await app.services.accounts.login(request.body.login, request.body.password, { ip: request.ip })
    if (challenge !== undefined) {
      setChallengeCookie(reply, app.services.sessions.cookie, challenge.token)
      return { success: true as const, message: 'Password accepted: send a code from your authenticator app to POST /api/auth/2fa/verify.', data: { two_factor_required: true as const } }
    }
    app.services.sessions.setCookie(reply, session.id, session.expiresAt)
    return { success: true as const, message: 'Logged in successfully.', data: { user: userView(user) } }
  })

  app.post('/api/auth/logout', {
    config: publicRoute,
    schema: { tags, summary: 'Log out: delete the session and clear the cookie', response: { 200: Message } },
  }, async (request, reply) => {
    await app.services.accounts.logout(request.cookies[SESSION_COOKIE], { ip: request.ip })
    app.services.sessions.clearCookie(reply)
    return { success: true as const, message: 'Logged out successfully.' }
  })

  app.post('/api/auth/email/resend-verification', {
    config: { ...publicRoute, limit: 'forgotPassword' },
    schema: { tags, summary: 'Send the verification mail again', description: 'Always the same answer, in the same time, whether or not an unverified account has the address (no account enumeration). 503 EMAIL_DISABLED while mail sending is off.', body: EmailBody, response: { 200: Message } },
  }, async (request) => {
    await app.services.emailFlows.resendVerification(request.body.email, request.id)
    return { success: true as const, message: SAME_ANSWER }
  })

  app.post('/api/auth/email/forgot-password', {
    config: { ...publicRoute, limit: 'forgotPassword' },
    schema: {
      tags, summary: 'Ask for a password reset mail',
      description: 'Always the same answer, in the same time, whether or not the account exists. 503 EMAIL_DISABLED while mail sending is off.',
      body: EmailBody, response: { 200: Message },
    },
  }, async (request) => {
    await app.services.emailFlows.forgotPassword(request.body.email, request.id)
    return { success: true as const, message: SAME_ANSWER }
  })

  app.put('/api/auth/email/change-password', {
    config: { auth: policy.session(), limit: 'passwordChange' },
    schema: {
      tags, summary: 'Change the password (ends every other session)',
      description: 'Keeps the calling session; ends every other session of the user and every OAuth grant (the CLI\'s and MCP clients\' ' +
        'access and refresh tokens). 400 INVALID_PASSWORD when `current_password` is wrong: it counts as a failed login against the ' +
        'account\'s lockout, and the failure that reaches the limit, like every call while the account is locked, answers 429 RATE_LIMITED ' +
        'with Retry-After (login is locked too). Per IP, 20 calls a minute, then 429 RATE_LIMITED with Retry-After.',
      body: ChangePasswordBody, response: { 200: Message },
    },
  }, async (request) => {
    const user = await currentUser(request, app.services.users)
    const caller = request.caller!
    await app.services.accounts.changePassword(user, caller.kind === 'user' ? caller.credentialId : '', request.body.current_password, request.body.new_password, { ip: request.ip })
    return { success: true as const, message: 'Password changed.' }
  })

  app.put('/api/auth/profile/update', {
    config: { auth: policy.session() },
    schema: { tags, summary: 'Update the username or names', body: ProfileBody, response: { 200: UserEnvelope } },
  }, async (request) => {
    const user = await app.services.accounts.updateProfile(await currentUser(request, app.services.users), request.body)
    return { success: true as const, message: 'Profile updated.', data: { user: userView(user) } }
  })
}
