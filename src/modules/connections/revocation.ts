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
 * offers revocation. The refresh token when there is one: revoking it ends the grant, and with it
 * the access tokens issued under it (RFC 7009 section 2.1 asks a server that can to do so); else the access
 * token, which a server may refuse as a type it does not revoke (`unsupported_token_type`, as
 * servers issuing self-contained JWT access tokens do): that is no failure, the token simply lives
 * out its short lifetime. Best effort, after the rows are gone: a server that is down or refuses
 * leaves a warning, never an error to the caller, and nothing is retried.
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
      const [token, hint] = tokens.refresh_token === undefined ? [tokens.access_token, 'access_token'] : [tokens.refresh_token, 'refresh_token']
      try {
        await oauth.processRevocationResponse(await oauth.revocationRequest(as, client.client, client.auth, token, { ...options, additionalParameters: { token_type_hint: hint } }))
      } catch (error) {
        if (hint === 'access_token' && error instanceof oauth.ResponseBodyError && error.error === 'unsupported_token_type') return
        throw error
      }
    } catch (error) {
      this.deps.log.warn({ connection_id: row.id, issuer: row.issuer, reason: error instanceof Error ? error.message : 'unknown' }, 'Revoking a forgotten connection at its authorization server failed; its tokens were deleted here')
    }
  }
}
