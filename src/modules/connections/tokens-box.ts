import { deriveKey } from '../../lib/keys.js'
import { createSecretBox, type SecretBox } from '../../lib/secret-box.js'

/**
 * A connection's tokens at rest: AES-256-GCM under a key derived from ENCRYPTION_SECRET for the
 * connections alone, with associated data naming the connection (installation, user, key): a
 * sealed token set copied to another installation, member or key does not open. The same key
 * seals the client secrets of upstream registrations, bound to their issuer, and the PKCE
 * verifiers of pending authorizations, bound to their state.
 */

/** Where a connection is kept: a member's own (`userId`) or the team's (`userId` null). */
export interface TokenPlace {
  installationId: string
  userId: string | null
  inputKey: string
}

/** What a connection holds. */
export interface ConnectionTokens {
  access_token: string
  refresh_token?: string
  token_type: string
  /** ISO 8601; null when the server gave no lifetime. */
  expires_at: string | null
  /** Space-separated, as granted. */
  scope: string
  /** Who signed in upstream (an email, a login), when the server says. */
  account: string | null
}

export interface TokensBox {
  sealTokens(place: TokenPlace, tokens: ConnectionTokens): string
  openTokens(place: TokenPlace, sealed: string): ConnectionTokens
  sealClientSecret(issuer: string, secret: string): string
  openClientSecret(issuer: string, sealed: string): string
  sealVerifier(flowId: string, verifier: string): string
  openVerifier(flowId: string, sealed: string): string
}

/** The associated data of a connection; a line break cannot occur in an id, and the key comes last. */
export const tokensAssociatedData = ({ installationId, userId, inputKey }: TokenPlace): string =>
  `oauth-connection\n${installationId}\n${userId ?? ''}\n${inputKey}`

export function tokensBoxFrom(box: SecretBox): TokensBox {
  return {
    sealTokens: (place, tokens) => box.seal(JSON.stringify(tokens), tokensAssociatedData(place)),
    openTokens: (place, sealed) => JSON.parse(box.open(sealed, tokensAssociatedData(place))) as ConnectionTokens,
    sealClientSecret: (issuer, secret) => box.seal(secret, `upstream-client\n${issuer}`),
    openClientSecret: (issuer, sealed) => box.open(sealed, `upstream-client\n${issuer}`),
    sealVerifier: (flowId, verifier) => box.seal(verifier, `oauth-connection-flow\n${flowId}`),
    openVerifier: (flowId, sealed) => box.open(sealed, `oauth-connection-flow\n${flowId}`),
  }
}

/** The box of connection tokens under one ENCRYPTION_SECRET. */
export const connectionTokensBox = (secret: string): TokensBox => tokensBoxFrom(createSecretBox(deriveKey(secret, 'oauth-connections')))
