import * as oauth from 'oauth4webapi'
import type { UpstreamClientRow, UpstreamClientsRepository } from '../../db/repositories/upstream-clients.js'
import { AppError } from '../../http/errors.js'
import type { Clock } from '../../lib/clock.js'
import type { AuditLog } from '../audit/service.js'
import { upstreamError, type Discovery } from './discovery.js'
import type { TokensBox } from './tokens-box.js'

/**
 * This backend as a client of a remote authorization server, registered in the order the MCP
 * authorization spec gives: its own client ID metadata document where the server supports one;
 * else dynamic client registration (RFC 7591), once per issuer, kept and reused (and done again
 * when the server no longer knows the client); else the credentials a global admin entered for
 * that issuer; else 409 UPSTREAM_CLIENT_REQUIRED naming the issuer.
 */

export const CLIENT_DOCUMENT_PATH = '/api/oauth/upstream/client.json'
export const CALLBACK_PATH = '/api/oauth/upstream/callback'

/** A registration ready for oauth4webapi. */
export interface UpstreamClient {
  client: oauth.Client
  auth: oauth.ClientAuth
  method: 'metadata_document' | 'dynamic' | 'manual'
}

const AUTH_METHODS = ['none', 'client_secret_basic', 'client_secret_post'] as const
export type TokenEndpointAuthMethod = (typeof AUTH_METHODS)[number]

export interface ClientMetadataDocument {
  client_id: string
  client_name: string
  client_uri: string
  redirect_uris: string[]
  grant_types: string[]
  response_types: string[]
  token_endpoint_auth_method: string
}

export const clientRequired = (issuer: string) => new AppError(409, 'UPSTREAM_CLIENT_REQUIRED',
  `The authorization server ${issuer} supports neither client ID metadata documents nor dynamic registration: a global admin must enter this service's client credentials for it (PUT /api/oauth/upstream/clients/{issuer}).`)

export class Registration {
  constructor(private readonly deps: {
    clients: UpstreamClientsRepository
    discovery: Discovery
    box: TokensBox
    audit: AuditLog
    clock: Clock
    publicUrl: string
  }) {}

  get clientId(): string {
    return `${this.deps.publicUrl}${CLIENT_DOCUMENT_PATH}`
  }

  get redirectUri(): string {
    return `${this.deps.publicUrl}${CALLBACK_PATH}`
  }

  /** This backend's client ID metadata document. */
  document(): ClientMetadataDocument {
    return {
      client_id: this.clientId,
      client_name: 'MCP deployment platform',
      client_uri: this.deps.publicUrl,
      redirect_uris: [this.redirectUri],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    }
  }

  /** The client to start an authorization with at `as`. */
  async clientFor(as: oauth.AuthorizationServer): Promise<UpstreamClient> {
    const issuer = as.issuer
    if (as.client_id_metadata_document_supported === true && this.clientId.startsWith('https://')) {
      return { client: { client_id: this.clientId, token_endpoint_auth_method: 'none' }, auth: oauth.None(), method: 'metadata_document' }
    }
    const stored = await this.deps.clients.find(issuer)
    if (stored !== undefined) return this.fromRow(stored)
    if (as.registration_endpoint !== undefined) return this.fromRow(await this.register(as))
    throw clientRequired(issuer)
  }

  /** The client that issued a connection's tokens (refresh, revocation); null when that registration is gone. */
  async clientById(issuer: string, clientId: string): Promise<UpstreamClient | null> {
    if (clientId === this.clientId) return { client: { client_id: clientId, token_endpoint_auth_method: 'none' }, auth: oauth.None(), method: 'metadata_document' }
    const stored = await this.deps.clients.find(issuer)
    return stored !== undefined && stored.clientId === clientId ? this.fromRow(stored) : null
  }

  /**
   * The server answered `invalid_client` for a dynamic registration: forget it, so that the next
   * connect registers again. True when there was one to forget.
   */
  async invalidated(issuer: string, clientId: string): Promise<boolean> {
    const stored = await this.deps.clients.find(issuer)
    if (stored?.method !== 'dynamic' || stored.clientId !== clientId) return false
    await this.deps.clients.forgetDynamic(issuer, clientId)
    return true
  }

  /** RFC 7591, public client when the server allows it; of two concurrent first registrations one is kept. */
  private async register(as: oauth.AuthorizationServer): Promise<UpstreamClientRow> {
    const supported = as.token_endpoint_auth_methods_supported ?? ['client_secret_basic']
    const method: TokenEndpointAuthMethod = AUTH_METHODS.find((m) => supported.includes(m)) ?? 'client_secret_basic'
    let registered: oauth.OmitSymbolProperties<oauth.Client>
    try {
      const response = await oauth.dynamicClientRegistrationRequest(as, {
        ...this.document(), client_id: undefined, token_endpoint_auth_method: method,
      }, this.deps.discovery.options(as.registration_endpoint!))
      registered = await oauth.processDynamicClientRegistrationResponse(response)
    } catch (error) {
      throw upstreamError(`registration at ${as.issuer}`, error)
    }
    const now = new Date(this.deps.clock.now())
    const secret = typeof registered.client_secret === 'string' ? registered.client_secret : null
    const row: UpstreamClientRow = {
      issuer: as.issuer, method: 'dynamic', clientId: registered.client_id,
      clientSecretSealed: secret === null ? null : this.deps.box.sealClientSecret(as.issuer, secret),
      tokenEndpointAuthMethod: typeof registered.token_endpoint_auth_method === 'string' ? registered.token_endpoint_auth_method : method,
      registeredAt: now, updatedAt: now,
    }
    const kept = await this.deps.clients.keepFirst(row)
    if (kept.clientId === row.clientId) await this.deps.audit.record('upstream_client.registered', { target: as.issuer, details: { issuer: as.issuer, client_id: row.clientId, method: 'dynamic' } })
    return kept
  }

  private fromRow(row: UpstreamClientRow): UpstreamClient {
    const method = row.tokenEndpointAuthMethod
    const secret = row.clientSecretSealed === null ? null : this.deps.box.openClientSecret(row.issuer, row.clientSecretSealed)
    const auth = secret === null || method === 'none'
      ? oauth.None()
      : method === 'client_secret_post' ? oauth.ClientSecretPost(secret) : oauth.ClientSecretBasic(secret)
    return { client: { client_id: row.clientId, token_endpoint_auth_method: secret === null ? 'none' : method }, auth, method: row.method }
  }
}
