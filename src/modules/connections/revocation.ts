import * as oauth from 'oauth4webapi'
import type { ConnectionRow } from '../../db/repositories/connections.js'
import type { Discovery } from './discovery.js'
import type { Registration } from './registration.js'
import type { TokensBox } from './tokens-box.js'

/** What a revocation attempt leaves in the log: ids and the issuer, never a token. */
export interface RevocationLog {
  warn(details: Record<string, unknown>, message: string): void
}

/**
 * Revokes the tokens of forgotten connections at their authorization server (RFC 7009) when it
 * offers revocation: the refresh token (which ends the grant at most servers), then the access
 * token. Best effort, after the rows are gone: a server that is down or refuses leaves a warning,
 * never an error to the caller, and nothing is retried.
 */
export class Revoker {
  constructor(private readonly deps: { discovery: Discovery; registration: Registration; box: TokensBox; log: RevocationLog }) {}

  async revokeAll(rows: readonly ConnectionRow[]): Promise<void> {
    await Promise.all(rows.map((row) => this.revoke(row)))
  }

  async revoke(row: ConnectionRow): Promise<void> {
    try {
      const tokens = this.deps.box.openTokens({ installationId: row.installationId, userId: row.userId, inputKey: row.inputKey }, row.sealed)
      const as = await this.deps.discovery.authorizationServer(row.issuer)
      if (as.revocation_endpoint === undefined) return
      const client = await this.deps.registration.clientById(row.issuer, row.clientId)
      if (client === null) return
      const options = this.deps.discovery.options(as.revocation_endpoint)
      for (const [token, hint] of [[tokens.refresh_token, 'refresh_token'], [tokens.access_token, 'access_token']] as const) {
        if (token === undefined) continue
        await oauth.processRevocationResponse(await oauth.revocationRequest(as, client.client, client.auth, token, { ...options, additionalParameters: { token_type_hint: hint } }))
      }
    } catch (error) {
      this.deps.log.warn({ connection_id: row.id, issuer: row.issuer, reason: error instanceof Error ? error.message : 'unknown' }, 'Revoking a forgotten connection at its authorization server failed; its tokens were deleted here')
    }
  }
}
