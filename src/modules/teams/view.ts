import type { MemberView, TeamWithCount } from '../../db/repositories/teams.js'
import type { TeamRole } from '../../auth/permissions.js'
import { isoTime } from '../../lib/iso-time.js'

/** A team as its caller sees it (their role, whether they own it). */
export function teamView(team: TeamWithCount & { role: TeamRole | null }, callerId: string) {
  return {
    id: team.id,
    name: team.name,
    slug: team.slug,
    description: team.description,
    owner_id: team.ownerId,
    is_default: team.isDefault,
    member_count: team.memberCount,
    created_at: isoTime(team.createdAt),
    updated_at: isoTime(team.updatedAt),
    role: team.role,
    is_owner: team.ownerId === callerId,
  }
}

export interface MemberViewer {
  userId: string
  /** Holds users.view (a global admin): sees every member's address. */
  seesEveryEmail: boolean
  /** The id of a member whose address the viewer typed in this very request (adding by email). */
  typedEmailOf?: string
}

/**
 * A member as `viewer` sees them. Adding someone to a team needs no consent from them, so
 * membership is no reason to reveal their address: it is shown to the member themself, to a user
 * administrator, and back to whoever just typed it; to anyone else it is null.
 */
export function memberView(member: MemberView, ownerId: string, viewer: MemberViewer) {
  const showsEmail = viewer.seesEveryEmail || member.userId === viewer.userId || member.userId === viewer.typedEmailOf
  return {
    user_id: member.userId,
    username: member.username,
    email: showsEmail ? member.email : null,
    role: member.role,
    is_owner: member.userId === ownerId,
    joined_at: isoTime(member.joinedAt),
  }
}
