import type { CookieSerializeOptions } from '@fastify/cookie'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Config } from '../config.js'
import { newId } from '../db/ids.js'
import type { SessionsRepository } from '../db/repositories/sessions.js'
import type { UserRow } from '../db/repositories/users.js'
import type { Clock } from '../lib/clock.js'
import { randomToken, type Digester } from '../lib/tokens.js'
import type { UserCaller } from './caller.js'
import { SESSION_COOKIE } from './credentials-from-request.js'

/** 30 days, renewed (same id, new expiry) once fewer than 15 days remain. */
export const SESSION_LIFETIME_MS = 30 * 24 * 60 * 60 * 1000
export const SESSION_RENEW_BELOW_MS = 15 * 24 * 60 * 60 * 1000

export interface SessionCaller extends UserCaller {
  user: UserRow
  /** When the session began (sign-in): `prompt=login` asks for a sign-in newer than the request. */
  signedInAt: Date
  /** Set when this request renewed the session: the cookie is sent again. */
  renewedUntil?: Date
}

export class SessionService {
  readonly cookie: CookieSerializeOptions

  constructor(
    private readonly repository: SessionsRepository,
    private readonly digest: Digester,
    private readonly clock: Clock,
    config: Config,
  ) {
    this.cookie = {
      httpOnly: true,
      sameSite: 'lax',
      path: '/',
      secure: config.secureCookies,
    }
  }

  /** A new session id (login always issues a new one); only its digest is stored. */
  async create(userId: string, repository = this.repository): Promise<{ id: string; rowId: string; expiresAt: Date }> {
    const id = randomToken()
    const rowId = newId()
    const now = this.clock.now()
    const expiresAt = new Date(now + SESSION_LIFETIME_MS)
    await repository.insert({ id: rowId, digest: this.digest(id), userId, expiresAt, createdAt: new Date(now) })
    return { id, rowId, expiresAt }
  }

  async verify(sessionId: string): Promise<SessionCaller | null> {
    const now = this.clock.now()
    const found = await this.repository.findLive(this.digest(sessionId), new Date(now))
    if (found === undefined) return null
    const { session, user, defaultTeam } = found
    const caller: SessionCaller = { kind: 'user', via: 'session', userId: user.id, role: user.roleId, credentialId: session.id, user, defaultTeam, signedInAt: session.createdAt }
    if (session.expiresAt.getTime() - now < SESSION_RENEW_BELOW_MS) {
      caller.renewedUntil = new Date(now + SESSION_LIFETIME_MS)
      await this.repository.extend(session.id, caller.renewedUntil)
    }
    return caller
  }

  /** Logout: the session dies with its cookie. Returns the user it belonged to, if any. */
  async destroy(sessionId: string): Promise<string | null> {
    return this.repository.deleteByDigest(this.digest(sessionId))
  }

  setCookie(reply: FastifyReply, sessionId: string, expiresAt: Date): void {
    reply.setCookie(SESSION_COOKIE, sessionId, { ...this.cookie, maxAge: Math.round((expiresAt.getTime() - this.clock.now()) / 1000) })
  }

  clearCookie(reply: FastifyReply): void {
    reply.setCookie(SESSION_COOKIE, '', { ...this.cookie, maxAge: 0 })
  }
}

/**
 * The browser's session, if its cookie is valid (public routes that adapt to a signed-in user);
 * a session this request renewed gets its cookie again.
 */
export async function optionalSession(sessions: Pick<SessionService, 'verify' | 'setCookie'>, request: FastifyRequest, reply: FastifyReply): Promise<SessionCaller | null> {
  const id = request.cookies[SESSION_COOKIE]
  const session = id ? await sessions.verify(id) : null
  if (id && session?.renewedUntil !== undefined) sessions.setCookie(reply, id, session.renewedUntil)
  return session
}
