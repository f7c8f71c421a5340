import { newId } from '../../db/ids.js'
import type { AuditRepository } from '../../db/repositories/audit.js'
import type { Db } from '../../db/types.js'
import type { Clock } from '../../lib/clock.js'

/** The security events recorded. Details never hold a secret. */
export type AuditEventType =
  | 'user.registered' | 'user.login' | 'user.login_failed' | 'user.logout' | 'user.password_changed'
  | 'user.password_reset' | 'user.role_changed' | 'user.deleted' | 'user.updated' | 'user.email_verified'
  | 'settings.updated'
  | 'oauth.consent_approved' | 'oauth.token_issued' | 'oauth.token_revoked' | 'oauth.code_reused'
  | 'oauth.refresh_token_reused' | 'oauth.client_registered'
  | 'catalogue.category_created' | 'catalogue.category_updated' | 'catalogue.category_deleted'
  | 'catalogue.server_created' | 'catalogue.server_updated' | 'catalogue.server_deleted'
  | 'catalogue.version_created' | 'catalogue.version_updated'
  | 'catalogue.servers_imported' | 'catalogue.registry_synced'
  | 'satellite.token_created' | 'satellite.token_revoked' | 'satellite.registered' | 'satellite.disabled'
  | 'satellite.enabled' | 'satellite.deleted' | 'satellite.public_key_changed'
  | 'installation.created' | 'installation.updated' | 'installation.values_set' | 'installation.my_values_set'
  | 'installation.restarted' | 'installation.deleted' | 'installation.placed' | 'installation.version_followed'
  | 'installation.released' | 'installation.own_values_dropped' | 'installation.entry_followed'
  | 'installation.tool_policy_set' | 'installation.tools_approved' | 'installation.tools_changed'
  | 'plugin.loaded' | 'plugin.item_deleted_by_moderator'
  | 'team.created' | 'team.deleted' | 'team.member_added' | 'team.member_removed' | 'team.member_left'
  | 'team.member_role_changed' | 'team.owner_transferred'
  | 'invitation.created' | 'invitation.accepted' | 'invitation.revoked'
  | 'connection.created' | 'connection.refreshed_failed' | 'connection.deleted'
  | 'upstream_client.registered' | 'upstream_client.saved' | 'upstream_client.deleted'
  | 'personal_token.created' | 'personal_token.revoked'
  | 'user.two_factor_enabled' | 'user.two_factor_disabled' | 'user.two_factor_failed' | 'user.recovery_code_used'

export interface AuditEntry {
  actorId?: string | null
  ip?: string | null
  target?: string | null
  details?: Record<string, unknown>
}

export class AuditLog {
  constructor(private readonly repository: AuditRepository, private readonly clock: Clock) {}

  /** Records an event; pass `tx` to make it part of an open transaction. */
  async record(type: AuditEventType, entry: AuditEntry = {}, tx?: Db): Promise<void> {
    const repository = tx === undefined ? this.repository : this.repository.with(tx)
    await repository.insert({
      id: newId(),
      type,
      actorId: entry.actorId ?? null,
      ip: entry.ip ?? null,
      target: entry.target ?? null,
      details: entry.details ?? {},
      createdAt: new Date(this.clock.now()),
    })
  }
}
