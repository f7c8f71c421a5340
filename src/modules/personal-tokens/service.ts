import type { UserCaller } from '../../auth/caller.js'
import { PERSONAL_TOKEN_PREFIX } from '../../auth/credentials-from-request.js'
import { newId } from '../../db/ids.js'
import type { OwnedPersonalToken, PersonalTokenRow, PersonalTokensRepository } from '../../db/repositories/personal-tokens.js'
import type { TeamsRepository } from '../../db/repositories/teams.js'
import type { Database } from '../../db/types.js'
import { AppError, errors } from '../../http/errors.js'
import type { Clock } from '../../lib/clock.js'
import { randomToken, type Digester } from '../../lib/tokens.js'
import type { AuditLog } from '../audit/service.js'
import { PERSONAL_TOKEN_SCOPES, type PersonalTokenScope } from './scopes.js'

/** At most this many unexpired tokens per user: enough for every script and pipeline, few enough to review. */
export const PERSONAL_TOKENS_PER_USER = 50

/** `last_used_at` moves at most this often per token (one conditional write a minute, not one per request). */
export const USE_RECORDED_EVERY_MS = 60_000

/** Expired tokens stay listed (as expired) this long, then the periodic purge deletes them. */
export const EXPIRED_KEPT_MS = 7 * 24 * 3600_000

const DAY_MS = 24 * 3600_000

export interface PersonalTokenDeps {
  database: Database
  repository: PersonalTokensRepository
  teams: Pick<TeamsRepository, 'with'>
  audit: AuditLog
  digest: Digester
  clock: Clock
  /** Where a failed `last_used_at` write is reported (it never fails the request). */
  log: { warn(object: object, message: string): void }
}

/** Who acts, and from where (the audit trail). */
export interface TokenActor {
  userId: string
  ip: string
}

export interface NewPersonalToken {
  name: string
  scopes: readonly PersonalTokenScope[]
  teamId?: string
  expiresInDays: number
}

/** Why a token ended, as its audit event says. */
export type RevocationReason = 'revoked_by_owner' | 'revoked_by_admin'

const limitReached = () => errors.conflict('TOKEN_LIMIT_REACHED',
  `You have ${PERSONAL_TOKENS_PER_USER} personal access tokens that have not expired, the most one account may hold; delete one you no longer use first.`)
const notYourTeam = () => new AppError(400, 'INVALID_TEAM', 'team_id must be a team you are a member of.')

/**
 * Personal access tokens: long-lived bearer credentials a user makes for scripts and CI. They are
 * checked like OAuth access tokens (the same scopes, the same team binding, the same login switch)
 * but come from no authorization server: no client, no refresh, no introspection.
 */
export class PersonalTokens {
  constructor(private readonly deps: PersonalTokenDeps) {}

  now(): Date {
    return new Date(this.deps.clock.now())
  }

  /** A new token for the caller; the only time its value exists outside the caller's hands. */
  async create(actor: TokenActor, input: NewPersonalToken): Promise<{ token: string; row: PersonalTokenRow }> {
    const { database, repository, teams, audit, digest } = this.deps
    const token = `${PERSONAL_TOKEN_PREFIX}${randomToken()}`
    const scopes = PERSONAL_TOKEN_SCOPES.filter((scope) => input.scopes.includes(scope))
    const row = await database.transaction(async (tx) => {
      const now = this.now()
      const rows = repository.with(tx)
      await rows.lockUser(actor.userId)
      if (input.teamId !== undefined && (await teams.with(tx).roleOf(actor.userId, input.teamId)) === null) throw notYourTeam()
      if ((await rows.countLive(actor.userId, now)) >= PERSONAL_TOKENS_PER_USER) throw limitReached()
      const created: PersonalTokenRow = {
        id: newId(), userId: actor.userId, teamId: input.teamId ?? null, name: input.name, scope: scopes.join(' '), digest: digest(token),
        expiresAt: new Date(now.getTime() + input.expiresInDays * DAY_MS), lastUsedAt: null, createdAt: now,
      }
      await rows.insert(created)
      await audit.record('personal_token.created', { actorId: actor.userId, ip: actor.ip, target: actor.userId, details: {
        ...auditDetails(created), expires_at: created.expiresAt.toISOString(),
      } }, tx)
      return created
    })
    return { token, row }
  }

  list(userId: string, limit: number, offset: number): Promise<{ rows: PersonalTokenRow[]; total: number }> {
    return this.deps.repository.listForUser(userId, limit, offset)
  }

  listAll(filter: { userId?: string; limit: number; offset: number }): Promise<{ rows: OwnedPersonalToken[]; total: number }> {
    return this.deps.repository.listAll(filter)
  }

  /** The owner deletes one of their tokens; another user's id is not found (404), so nothing is learnt about it. */
  revokeOwn(actor: TokenActor, id: string): Promise<void> {
    return this.revoke(actor, id, 'revoked_by_owner', actor.userId)
  }

  /** A global admin deletes anyone's token. */
  revokeAny(actor: TokenActor, id: string): Promise<void> {
    return this.revoke(actor, id, 'revoked_by_admin')
  }

  private async revoke(actor: TokenActor, id: string, reason: RevocationReason, ownerId?: string): Promise<void> {
    await this.deps.database.transaction(async (tx) => {
      const row = await this.deps.repository.with(tx).delete(id, ownerId)
      if (row === undefined) throw errors.notFound('Personal access token')
      await this.deps.audit.record('personal_token.revoked', { actorId: actor.userId, ip: actor.ip, target: row.userId, details: { ...auditDetails(row), reason } }, tx)
    })
  }

  /**
   * The bearer check for `service_pat_…`: one indexed lookup (which also requires the user to be
   * a member of the token's team), the expiry, and a use recorded off the request's path.
   */
  async verify(token: string): Promise<UserCaller | null> {
    const found = await this.deps.repository.findByDigest(this.deps.digest(token))
    if (found === undefined) return null
    const now = this.deps.clock.now()
    const { token: row, user, defaultTeam } = found
    if (row.expiresAt.getTime() <= now) return null
    this.recordUse(row, now)
    return { kind: 'user', via: 'bearer', userId: user.id, role: user.roleId, scopes: row.scope.split(' '), credentialId: row.id, user, defaultTeam, teamId: row.teamId }
  }

  /** Not awaited, and a failure is only logged: recording a use must neither slow nor fail the request. */
  private recordUse(row: PersonalTokenRow, now: number): void {
    if (row.lastUsedAt !== null && now - row.lastUsedAt.getTime() < USE_RECORDED_EVERY_MS) return
    this.deps.repository.touch(row.id, new Date(now), USE_RECORDED_EVERY_MS).catch((error: unknown) => {
      this.deps.log.warn({ err: error, personal_token_id: row.id }, 'recording the use of a personal access token failed')
    })
  }

  /** Deletes tokens expired for longer than they stay listed. */
  purgeExpired(): Promise<void> {
    return this.deps.repository.purgeExpired(new Date(this.deps.clock.now() - EXPIRED_KEPT_MS))
  }
}

/** What the audit trail says about a token: never its value or digest. */
function auditDetails(row: PersonalTokenRow): Record<string, unknown> {
  return { token_id: row.id, name: row.name, scopes: row.scope.split(' '), team_id: row.teamId }
}
