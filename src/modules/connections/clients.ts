import type { UpstreamClientRow, UpstreamClientsRepository } from '../../db/repositories/upstream-clients.js'
import { errors } from '../../http/errors.js'
import type { Clock } from '../../lib/clock.js'
import type { AuditLog } from '../audit/service.js'
import type { TokenEndpointAuthMethod } from './registration.js'
import type { TokensBox } from './tokens-box.js'

/** A registration as a global admin reads it: the secret only as `has_secret`. */
export interface UpstreamClientView {
  issuer: string
  method: 'dynamic' | 'manual'
  client_id: string
  token_endpoint_auth_method: string
  has_secret: boolean
  registered_at: string
  updated_at: string
}

export interface ClientCredentials {
  client_id: string
  client_secret?: string
  token_endpoint_auth_method?: TokenEndpointAuthMethod
}

interface Actor { userId: string; ip: string }

/** The registrations at remote authorization servers, as global admins manage them. */
export class UpstreamClients {
  constructor(private readonly deps: { clients: UpstreamClientsRepository; box: TokensBox; audit: AuditLog; clock: Clock; isAllowedHost: (url: URL) => boolean }) {}

  async list(): Promise<UpstreamClientView[]> {
    return (await this.deps.clients.list()).map(view)
  }

  /** Enters (or replaces) the credentials for an issuer; they replace a dynamic registration too. */
  async put(issuer: string, body: ClientCredentials, actor: Actor): Promise<UpstreamClientView> {
    const url = parseIssuer(issuer)
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && this.deps.isAllowedHost(url))) {
      throw errors.validation([{ field: 'issuer', message: 'an issuer is an https URL (plain http only for hosts in OUTBOUND_ALLOWED_HOSTS)', in: 'params' }])
    }
    const method = body.token_endpoint_auth_method ?? (body.client_secret === undefined ? 'none' : 'client_secret_basic')
    if (method !== 'none' && body.client_secret === undefined) {
      throw errors.validation([{ field: 'client_secret', message: `is required with token_endpoint_auth_method ${method}`, in: 'body' }])
    }
    const now = new Date(this.deps.clock.now())
    const row: UpstreamClientRow = {
      issuer, method: 'manual', clientId: body.client_id,
      clientSecretSealed: body.client_secret === undefined || method === 'none' ? null : this.deps.box.sealClientSecret(issuer, body.client_secret),
      tokenEndpointAuthMethod: method, registeredAt: now, updatedAt: now,
    }
    await this.deps.clients.put(row)
    await this.deps.audit.record('upstream_client.saved', { actorId: actor.userId, ip: actor.ip, target: issuer, details: { issuer, client_id: body.client_id, token_endpoint_auth_method: method } })
    return view(row)
  }

  async remove(issuer: string, actor: Actor): Promise<void> {
    if (!(await this.deps.clients.delete(issuer))) throw errors.notFound('Upstream client')
    await this.deps.audit.record('upstream_client.deleted', { actorId: actor.userId, ip: actor.ip, target: issuer, details: { issuer } })
  }
}

function parseIssuer(issuer: string): URL {
  try {
    const url = new URL(issuer)
    if (url.hash !== '' || url.search !== '' || url.href.replace(/\/$/, '') !== issuer.replace(/\/$/, '')) throw new Error('not canonical')
    return url
  } catch {
    throw errors.validation([{ field: 'issuer', message: 'must be the issuer identifier exactly as the authorization server states it (an absolute URL, no query or fragment), percent-encoded in the path', in: 'params' }])
  }
}

const view = (row: UpstreamClientRow): UpstreamClientView => ({
  issuer: row.issuer, method: row.method, client_id: row.clientId, token_endpoint_auth_method: row.tokenEndpointAuthMethod,
  has_secret: row.clientSecretSealed !== null, registered_at: row.registeredAt.toISOString(), updated_at: row.updatedAt.toISOString(),
})
