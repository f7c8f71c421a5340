/**
 * The shape of an installation's inputs, as stored with the installation and answered by the API.
 * The modules/installations/inputs.ts derivation says where they come from.
 */

/**
 * `oauth`: not a value but a connection (the tokens of an account at the remote server's
 * authorization server), made through the connect flow; key `oauth:<resource>`.
 */
export type InputKind = 'env' | 'arg' | 'header' | 'urlvar' | 'oauth'
/** How a value is checked (the format's `format`); `string` takes any text. */
export type InputFormat = 'string' | 'number' | 'boolean' | 'filepath'
/** Who sets the value: the team once for all its members, or each member for themselves. */
export type InputScope = 'team' | 'user'

export interface InstallationInput {
  key: string
  kind: InputKind
  /** Empty when the document gives none. */
  description: string
  required: boolean
  /** A secret value (a token, a password) is never shown back once set. */
  secret: boolean
  default?: string
  /** When given, the only values allowed. */
  choices?: string[]
  /** As the document gives it; absent means `string`. */
  format?: InputFormat
  scope: InputScope
  /** Only for kind `oauth`: what the connection is for. */
  oauth?: OAuthInputDetails
}

/** Of an oauth input: the remote server as a resource (RFC 8707) and what its metadata says. */
export interface OAuthInputDetails {
  /** The remote server's canonical URI: scheme and host lower case, no fragment. */
  resource: string
  /** The protected-resource metadata URL (RFC 9728) the server named, when it named one. */
  resource_metadata: string | null
  /** The scopes to ask for (from the challenge or the metadata); may be empty. */
  scopes: string[]
}

export interface InstallationTarget {
  kind: 'package' | 'remote'
  /** The position in the version's `packages` or `remotes`, from 0. */
  index: number
}

