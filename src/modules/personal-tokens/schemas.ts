import { Type } from 'typebox'
import { Nullable, Ok, Pagination, PaginationQuery } from '../../http/envelope.js'
import { PERSONAL_TOKEN_SCOPES } from './scopes.js'

const closed = { additionalProperties: false } as const
const Timestamp = Type.String({ format: 'date-time' })
const Id = Type.String({ minLength: 1, maxLength: 100 })

export const IdParams = Type.Object({ id: Id }, closed)

export const TokenScope = Type.Union(PERSONAL_TOKEN_SCOPES.map((scope) => Type.Literal(scope)), {
  description: 'What the token may call, as for an OAuth access token: `mcp:read`, `account:read`, `user:read`, `teams:read`.',
})

export const TokenName = Type.String({
  minLength: 1, maxLength: 100, pattern: '\\S',
  description: 'A label for the owner (where the token is used); 1–100 characters, not only spaces. Need not be unique.',
})

export const CreateTokenBody = Type.Object({
  name: TokenName,
  scopes: Type.Array(TokenScope, { minItems: 1, maxItems: PERSONAL_TOKEN_SCOPES.length, uniqueItems: true, description: 'At least one scope, each once.' }),
  team_id: Type.Optional(Type.String({
    minLength: 1, maxLength: 100,
    description: 'Bind the token to this team, one the caller is a member of (else 400 INVALID_TEAM): it then reaches that team only. Absent: every team of the caller.',
  })),
  expires_in_days: Type.Integer({ minimum: 1, maximum: 365, description: 'Lifetime in whole days, 1–365.' }),
}, closed)

/** A token as its owner sees it: never its value. */
export const TokenView = Type.Object({
  id: Type.String(),
  name: Type.String(),
  scopes: Type.Array(Type.String()),
  team_id: Nullable(Type.String({ description: 'The team the token is bound to; null: every team of its owner.' })),
  expires_at: Timestamp,
  expired: Type.Boolean({ description: 'Past `expires_at`: refused, and deleted a week later.' }),
  last_used_at: Nullable(Type.String({ format: 'date-time', description: 'The last use, recorded at most once a minute; null: never used.' })),
  created_at: Timestamp,
})

export const CreatedTokenEnvelope = Ok(Type.Object({
  token: Type.String({ description: 'Shown once: `service_pat_` and 256 random bits (base64url). Only its HMAC digest is stored.' }),
  id: Type.String(),
  name: Type.String(),
  scopes: Type.Array(Type.String()),
  team_id: Nullable(Type.String()),
  expires_at: Timestamp,
  created_at: Timestamp,
}))

export const TokensEnvelope = Ok(Type.Object({ tokens: Type.Array(TokenView), pagination: Pagination }))

export const TokensQuery = Type.Object({ ...PaginationQuery }, closed)

export const Owner = Type.Object({ id: Type.String(), username: Type.String(), email: Type.String() })

export const OwnedTokenView = Type.Object({ ...TokenView.properties, owner: Owner })

export const AdminTokensQuery = Type.Object({
  ...PaginationQuery,
  user_id: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Only this user\'s tokens.' })),
}, closed)

export const AdminTokensEnvelope = Ok(Type.Object({ tokens: Type.Array(OwnedTokenView), pagination: Pagination }))
