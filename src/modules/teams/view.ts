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

export function memberView(member: MemberView, ownerId: string) {
  return {
    user_id: member.userId,
    username: member.username,
    email: member.email,
    role: member.role,
    is_owner: member.userId === ownerId,
    joined_at: isoTime(member.joinedAt),
  }
}
