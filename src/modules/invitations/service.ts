import type { UserActor } from '../../auth/caller.js'
import type { TeamRole } from '../../auth/permissions.js'
import { newId } from '../../db/ids.js'
import { invitationStatus, type InvitationRow, type InvitationsRepository, type InvitationStatus, type InvitationWithNames } from '../../db/repositories/invitations.js'
import type { TeamsRepository } from '../../db/repositories/teams.js'
import type { UserRow, UsersRepository } from '../../db/repositories/users.js'
import type { Database, Db } from '../../db/types.js'
import { AppError, errors } from '../../http/errors.js'
import type { Clock } from '../../lib/clock.js'
import { randomToken, type Digester } from '../../lib/tokens.js'
import type { AuditLog } from '../audit/service.js'
import type { MailService } from '../mail/service.js'
import { invitationMail } from '../mail/templates.js'
import type { SettingsService } from '../settings/service.js'
import { AcceptLinks } from './links.js'

/** An invitation is good for a week, and for one acceptance. */
export const INVITATION_LIFETIME_MS = 7 * 24 * 3600_000

/** Purged a week after it expired (used or not), so that a late visitor hears "expired" rather than "unknown" meanwhile. */
export const INVITATION_RETENTION_MS = 7 * 24 * 3600_000

/** What the invitation service is built from (services.ts). */
export interface InvitationDeps {
  database: Database
  invitations: InvitationsRepository
  teams: TeamsRepository
  users: UsersRepository
  settings: SettingsService
  mail: MailService
  audit: AuditLog
  digest: Digester
  clock: Clock
  links: AcceptLinks
}

/** What creating answers: the token is in `acceptUrl`, shown this once. */
export interface CreatedInvitation {
  row: InvitationRow & { inviterUsername: string }
  acceptUrl: string
  mailSent: boolean
}

const invalidToken = (message = 'This invitation link is invalid.') => new AppError(400, 'INVALID_TOKEN', message)
const seatsFull = (limit: number) => errors.conflict('MEMBER_LIMIT_REACHED', `A team may have at most ${limit} members, pending invitations included.`)
const alreadyMember = (who: string) => errors.conflict('ALREADY_MEMBER', `${who} already a member of the team.`)

/** Team invitations by email: create, list, revoke, look up, accept. No Fastify types here. */
export class InvitationService {
  constructor(private readonly deps: InvitationDeps) {}

  /**
   * A pending invitation holds a seat: members plus pending invitations stay within
   * `team.member_limit`. The team row is locked, so concurrent invitations and additions count in turn.
   */
  async create(teamId: string, input: { email: string; role: TeamRole }, actor: UserActor, requestId?: string): Promise<CreatedInvitation> {
    const { database, teams, users, invitations, settings, audit } = this.deps
    const email = input.email.toLowerCase()
    const limit = await settings.get('team.member_limit')
    const token = randomToken()
    const now = this.now()
    const row: InvitationRow = {
      id: newId(), teamId, email, role: input.role, digest: this.deps.digest(token), invitedBy: actor.userId,
      createdAt: now, expiresAt: new Date(now.getTime() + INVITATION_LIFETIME_MS), acceptedAt: null, acceptedBy: null, revokedAt: null,
    }
    const teamName = await database.transaction(async (tx) => {
      const txTeams = teams.with(tx)
      const txInvitations = invitations.with(tx)
      await txTeams.lock(teamId)
      const team = await txTeams.find(teamId)
      if (team === undefined) throw errors.notFound('Team')
      if (team.isDefault) throw errors.conflict('DEFAULT_TEAM', 'A default team cannot be given other members.')
      const user = await users.with(tx).findByLogin(email)
      if (user !== undefined && (await txTeams.roleOf(user.id, teamId)) !== null) throw alreadyMember('The person with this address is')
      if ((await txInvitations.pendingFor(teamId, email, now)) !== undefined) {
        throw errors.conflict('INVITATION_PENDING', 'This address has a pending invitation to the team already; revoke it first to send a new one.')
      }
      if (team.memberCount + (await txInvitations.countPending(teamId, now)) >= limit) throw seatsFull(limit)
      await txInvitations.insert(row)
      await audit.record('invitation.created', invitationEvent(actor.userId, actor.ip, row), tx)
      return team.name
    })
    const inviter = (await users.findById(actor.userId))?.username ?? ''
    const acceptUrl = await this.deps.links.acceptUrl(token)
    const mailSent = await this.deps.mail.sendBestEffort({
      to: email,
      ...invitationMail({ inviter, team: teamName, role: input.role, link: acceptUrl, expiresInDays: INVITATION_LIFETIME_MS / 86_400_000 }),
    }, { mail: 'invitation', requestId })
    return { row: { ...row, inviterUsername: inviter }, acceptUrl, mailSent }
  }

  /** A team's invitations, newest first; `status` undefined lists every one. */
  list(teamId: string, query: { status?: InvitationStatus; limit: number; offset: number }) {
    return this.deps.invitations.list({ teamId, ...query, now: this.now() })
  }

  /** An accepted invitation cannot be revoked (remove the member instead); a revoked one is revoked already. */
  async revoke(teamId: string, id: string, actor: UserActor): Promise<void> {
    const { database, invitations, audit } = this.deps
    await database.transaction(async (tx) => {
      const txInvitations = invitations.with(tx)
      const row = await txInvitations.findInTeam(teamId, id)
      if (row === undefined) throw errors.notFound('Invitation')
      if (!(await txInvitations.revoke(id, this.now()))) {
        const current = (await txInvitations.findInTeam(teamId, id)) ?? row
        if (current.acceptedAt !== null) throw errors.conflict('TOKEN_ALREADY_USED', 'This invitation was accepted already; remove the member instead.')
        throw errors.conflict('TOKEN_ALREADY_REVOKED', 'This invitation was revoked already.')
      }
      await audit.record('invitation.revoked', invitationEvent(actor.userId, actor.ip, row), tx)
    })
  }

  /** The invitation behind a link, while it can still be accepted. */
  async lookup(token: string): Promise<InvitationWithNames> {
    const row = await this.deps.invitations.findByDigest(this.deps.digest(token))
    if (row === undefined) throw invalidToken()
    switch (invitationStatus(row, this.now())) {
      case 'accepted': throw invalidToken('This invitation was accepted already.')
      case 'revoked': throw invalidToken('This invitation was revoked by the team.')
      case 'expired': throw new AppError(400, 'INVITATION_EXPIRED', 'This invitation has expired; ask the team for a new one.')
      case 'pending': return row
    }
  }

  /**
   * Adds `user` to the team with the invited role, when their verified address is the invited
   * one. The invitation is used up in the same transaction as the membership is made, by one
   * conditional update, so of concurrent acceptances exactly one succeeds.
   */
  async accept(token: string, user: UserRow, ip: string | null): Promise<{ teamId: string; role: TeamRole }> {
    const { database, teams, users, invitations, settings, audit } = this.deps
    const invitation = await this.lookup(token)
    if (user.email.toLowerCase() !== invitation.email) {
      throw new AppError(403, 'INVITATION_EMAIL_MISMATCH', 'This invitation is for another email address: sign in with the account of the invited address.')
    }
    if (!user.emailVerified) throw new AppError(403, 'EMAIL_NOT_VERIFIED', 'Verify your email address before accepting this invitation.')
    const limit = await settings.get('team.member_limit')
    const { teamId, role } = invitation
    await database.transaction(async (tx) => {
      const txTeams = teams.with(tx)
      const txInvitations = invitations.with(tx)
      const now = this.now()
      await txTeams.lock(teamId)
      const team = await txTeams.find(teamId)
      if (team === undefined) throw invalidToken()
      if ((await txTeams.roleOf(user.id, teamId)) !== null) throw alreadyMember('You are')
      if (!(await users.with(tx).lockUser(user.id))) throw errors.unauthorized()
      // Its own seat is the one it turns into a membership; a lowered limit may leave none.
      if (team.memberCount + (await txInvitations.countPending(teamId, now, invitation.id)) >= limit) throw seatsFull(limit)
      if (!(await txInvitations.accept(invitation.id, user.id, now))) throw invalidToken('This invitation was accepted or revoked meanwhile.')
      if (!(await txTeams.addMember(teamId, user.id, role, now))) throw alreadyMember('You are')
      await audit.record('invitation.accepted', invitationEvent(user.id, ip, invitation), tx)
      await audit.record('team.member_added', { actorId: user.id, ip, target: teamId, details: { team_id: teamId, user_id: user.id, role, invitation_id: invitation.id } }, tx)
    })
    return { teamId, role }
  }

  /** The invited address of a pending invitation (a registration with it counts as verified), else null. */
  async pendingAddress(token: string): Promise<string | null> {
    const row = await this.deps.invitations.findByDigest(this.deps.digest(token))
    return row !== undefined && invitationStatus(row, this.now()) === 'pending' ? row.email : null
  }

  /** Seats the team's pending invitations hold, read inside `tx` (the team's member additions count them). */
  pendingSeats(teamId: string, tx: Db): Promise<number> {
    return this.deps.invitations.with(tx).countPending(teamId, this.now())
  }

  /** Invitations a week past their expiry go (the periodic purge). */
  purge(): Promise<void> {
    return this.deps.invitations.purgeExpired(new Date(this.deps.clock.now() - INVITATION_RETENTION_MS))
  }

  now(): Date {
    return new Date(this.deps.clock.now())
  }
}

/** An invitation event: the team is the target; the address and role are named, never the token. */
function invitationEvent(actorId: string, ip: string | null, row: InvitationRow) {
  return { actorId, ip, target: row.teamId, details: { team_id: row.teamId, invitation_id: row.id, email: row.email, role: row.role } }
}
