import { invitationStatus, type InvitationRow, type InvitationWithNames } from '../../db/repositories/invitations.js'
import { isoOrNull } from '../../http/envelope.js'
import { isoTime } from '../../lib/iso-time.js'

/** An invitation as the team's admins see it: everything but the token, which is not stored. */
export function invitationView(row: InvitationRow & { inviterUsername: string }, now: Date) {
  return {
    id: row.id,
    team_id: row.teamId,
    email: row.email,
    role: row.role,
    status: invitationStatus(row, now),
    invited_by: { id: row.invitedBy, username: row.inviterUsername },
    created_at: isoTime(row.createdAt),
    expires_at: isoTime(row.expiresAt),
    accepted_at: isoOrNull(row.acceptedAt),
    revoked_at: isoOrNull(row.revokedAt),
  }
}

/** What the holder of a link is told: the team, who invited, the address and role, until when. */
export function publicInvitationView(row: InvitationWithNames) {
  return {
    team: { id: row.teamId, name: row.teamName },
    inviter: { username: row.inviterUsername },
    email: row.email,
    role: row.role,
    expires_at: isoTime(row.expiresAt),
  }
}
