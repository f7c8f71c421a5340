import type { RegistrationCaller } from '../../auth/caller.js'
import { REGISTRATION_TOKEN_PREFIX } from '../../auth/credentials-from-request.js'
import { newId } from '../../db/ids.js'
import type { RegistrationTokenFilter, RegistrationTokenRow, RegistrationTokensRepository } from '../../db/repositories/registration-tokens.js'
import type { TeamsRepository } from '../../db/repositories/teams.js'
import type { Database } from '../../db/types.js'
import { AppError, errors } from '../../http/errors.js'
import type { Clock } from '../../lib/clock.js'
import type { AuditLog } from '../audit/service.js'
import { mayActOn, type SatelliteActor } from './actor.js'
import type { RefusalReason, RegistrationJwt, RegistrationScope } from './registration-jwt.js'
import { isoTime } from '../../lib/iso-time.js'

const HOUR = 3600
export const DEFAULT_LIFETIME_HOURS: Readonly<Record<RegistrationScope, number>> = { global: 1, team: 24 }

const REFUSALS: Readonly<Record<RefusalReason, string>> = {
  malformed: 'it is not a registration token issued by this service',
  bad_signature: 'its signature does not verify',
  algorithm_not_allowed: 'it is not signed with HS256',
  wrong_issuer: 'it was issued for another service',
  wrong_audience: 'it is not meant for satellite registration',
  invalid_claims: 'its claims are not those of a registration token',
  scope_mismatch: 'its prefix names another scope than the token holds',
  expired: 'it has expired',
  unknown: 'it is unknown here (deleted, or its team was deleted)',
  used: 'it has been used already',
  revoked: 'it has been revoked',
}

export function invalidRegistrationToken(reason: RefusalReason): AppError {
  return new AppError(401, 'INVALID_REGISTRATION_TOKEN', `Unauthorized: the registration token was refused: ${REFUSALS[reason]}.`, { reason })
    .withHeaders({ 'www-authenticate': 'Bearer error="invalid_token"' })
}

/** Why a token row cannot be used (null: it can). */
export function rowRefusal(row: RegistrationTokenRow | undefined, now: Date): RefusalReason | null {
  if (row === undefined) return 'unknown'
  if (row.usedAt !== null) return 'used'
  if (row.revokedAt !== null) return 'revoked'
  return row.expiresAt.getTime() <= now.getTime() ? 'expired' : null
}

/** Single-use registration tokens that pair a satellite with this backend. No Fastify types here. */
export class RegistrationTokens {
  constructor(private readonly deps: {
    database: Database; tokens: RegistrationTokensRepository; teams: TeamsRepository; jwt: RegistrationJwt; audit: AuditLog; clock: Clock
  }) {}

  /** The token string is returned here only; the row keeps its `jti`, never the token. */
  async issue(scope: RegistrationScope, teamId: string | null, expiresInHours: number | undefined, actor: SatelliteActor) {
    const { database, tokens, teams, jwt, audit } = this.deps
    if (teamId !== null && (await teams.find(teamId)) === undefined) throw errors.notFound('Team')
    const now = this.deps.clock.now()
    const iat = Math.floor(now / 1000)
    const exp = iat + (expiresInHours ?? DEFAULT_LIFETIME_HOURS[scope]) * HOUR
    const id = newId()
    const row: RegistrationTokenRow = {
      id, scope, teamId, createdBy: actor.userId, expiresAt: new Date(exp * 1000),
      usedAt: null, usedBySatelliteId: null, revokedAt: null, createdAt: new Date(now),
    }
    const signed = await jwt.sign({ jti: id, scope, ...(teamId === null ? {} : { team_id: teamId }), created_by: actor.userId, iat, exp })
    await database.transaction(async (tx) => {
      await tokens.with(tx).insert(row)
      await audit.record('satellite.token_created', { actorId: actor.userId, ip: actor.ip, target: id, details: { scope, team_id: teamId, expires_at: isoTime(row.expiresAt) } }, tx)
    })
    return { token: `${REGISTRATION_TOKEN_PREFIX}${scope}_${signed}`, row }
  }

  /**
   * The credential check of POST /api/satellites/register: the signature and claims, then the
   * `jti` row. Refusals are 401 INVALID_REGISTRATION_TOKEN with the reason. The row is checked
   * again, atomically, when the registration spends it.
   */
  async verify(token: string, scope: RegistrationScope): Promise<RegistrationCaller> {
    const verified = await this.deps.jwt.verify(token, scope)
    if (!verified.ok) throw invalidRegistrationToken(verified.reason)
    const { claims } = verified
    const row = await this.deps.tokens.find(claims.jti)
    const refusal = rowRefusal(row, this.now())
    if (refusal !== null) throw invalidRegistrationToken(refusal)
    if (row!.scope !== claims.scope || row!.teamId !== (claims.team_id ?? null)) throw invalidRegistrationToken('invalid_claims')
    return { kind: 'registration', tokenId: row!.id, scope: row!.scope, teamId: row!.teamId }
  }

  list(filter: Omit<RegistrationTokenFilter, 'now'>) {
    return this.deps.tokens.list({ ...filter, now: this.now() })
  }

  /** Revokes an unused token: a global admin any, a team admin their team's. */
  async revoke(id: string, actor: SatelliteActor): Promise<void> {
    const { database, tokens, teams, audit } = this.deps
    const row = await tokens.find(id)
    if (row === undefined || !(await mayActOn(actor, row.teamId, { global: 'satellites.manage', team: 'team.satellites.manage' }, teams))) {
      throw errors.notFound('Registration token')
    }
    await database.transaction(async (tx) => {
      if (!(await tokens.with(tx).revoke(id, this.now()))) {
        const current = await tokens.with(tx).find(id)
        if (current?.usedAt != null) throw errors.conflict('TOKEN_ALREADY_USED', 'This registration token has been used; delete the satellite instead.')
        if (current?.revokedAt != null) throw errors.conflict('TOKEN_ALREADY_REVOKED', 'This registration token is revoked already.')
        throw errors.notFound('Registration token')
      }
      await audit.record('satellite.token_revoked', { actorId: actor.userId, ip: actor.ip, target: id, details: { scope: row.scope, team_id: row.teamId } }, tx)
    })
  }

  now(): Date {
    return new Date(this.deps.clock.now())
  }
}
