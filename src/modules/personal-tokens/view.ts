import type { OwnedPersonalToken, PersonalTokenRow } from '../../db/repositories/personal-tokens.js'
import { isoOrNull } from '../../http/envelope.js'
import { isoTime } from '../../lib/iso-time.js'

/** A token as the API shows it: what it is for and when it was used, never its value or digest. */
export function tokenView(row: PersonalTokenRow, now: Date) {
  return {
    id: row.id,
    name: row.name,
    scopes: row.scope.split(' '),
    team_id: row.teamId,
    expires_at: isoTime(row.expiresAt),
    expired: row.expiresAt.getTime() <= now.getTime(),
    last_used_at: isoOrNull(row.lastUsedAt),
    created_at: isoTime(row.createdAt),
  }
}

/** A token with its owner, for global admins. */
export const ownedTokenView = ({ token, owner }: OwnedPersonalToken, now: Date) => ({ ...tokenView(token, now), owner })
