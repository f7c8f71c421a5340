/**
 * The shape of an installation's inputs, as stored with the installation and answered by the API.
 * The modules/installations/inputs.ts derivation says where they come from.
 */

export type InputKind = 'env' | 'arg' | 'header' | 'urlvar'
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
}

export interface InstallationTarget {
  kind: 'package' | 'remote'
  /** The position in the version's `packages` or `remotes`, from 0. */
  index: number
}

