import { Type } from 'typebox'
import { Ok } from '../http/envelope.js'

/** TypeBox schemas of the OAuth 2.0 endpoints; they also write the OpenAPI document. */

export const tags = ['OAuth2']
export const Redirect = Type.Null({ description: '302 with a Location header' })
const text = (maxLength: number, description?: string) => Type.Optional(Type.String({ maxLength, ...(description ? { description } : {}) }))

/** Protocol responses carry `success` next to the RFC fields. */
export const Protocol = <T extends Parameters<typeof Type.Object>[0]>(properties: T, description?: string) =>
  Type.Object({ success: Type.Literal(true), ...properties }, description ? { description } : {})

export const AuthorizeQuery = Type.Object({
  response_type: text(64, 'Must be `code`.'),
  client_id: text(256),
  redirect_uri: text(2048, 'Exactly one of the client\'s registered redirect URIs.'),
  scope: text(1024, 'Space-separated; defaults to every scope the client may ask for.'),
  state: text(1024, 'Required; echoed in the redirect.'),
  code_challenge: text(1024, 'BASE64URL(SHA-256(code_verifier)); 43–128 characters, else an invalid_request redirect.'),
  code_challenge_method: text(16, 'Must be `S256`; `plain` is refused.'),
}, { additionalProperties: false })

export const TokenBody = Type.Object({
  grant_type: text(64, '`authorization_code` or `refresh_token`'),
  client_id: text(256),
  code: text(256),
  redirect_uri: text(2048),
  code_verifier: text(256),
  refresh_token: text(256),
  scope: text(1024, 'refresh_token grant only: may narrow the granted scope, never widen it.'),
}, { additionalProperties: false })

export const TokenAnswer = Protocol({
  access_token: Type.String(),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer(),
  refresh_token: Type.Optional(Type.String({ description: 'Only when offline_access is granted; rotates on every use.' })),
  scope: Type.String(),
}, 'RFC 6749 §5.1 token response')

export const RevokeBody = Type.Object({
  token: text(256),
  token_type_hint: text(32, '`access_token` or `refresh_token` (a hint only).'),
  client_id: text(256),
}, { additionalProperties: false })

export const IntrospectBody = Type.Object({ token: text(256), token_type_hint: text(32) }, { additionalProperties: false })

export const IntrospectAnswer = Protocol({
  active: Type.Boolean(),
  scope: Type.Optional(Type.String()),
  client_id: Type.Optional(Type.String()),
  username: Type.Optional(Type.String()),
  sub: Type.Optional(Type.String()),
  exp: Type.Optional(Type.Integer()),
  iat: Type.Optional(Type.Integer()),
  team_id: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  token_type: Type.Optional(Type.String()),
  iss: Type.Optional(Type.String()),
}, 'RFC 7662 introspection response; `{active: false}` alone for unknown, expired, revoked or spent tokens')

export const ConsentQuery = Type.Object({ request_id: Type.String({ minLength: 1, maxLength: 128 }) }, { additionalProperties: false })

export const ConsentDetails = Ok(Type.Object({
  request_id: Type.String(),
  client_id: Type.String(),
  client_name: Type.String(),
  scopes: Type.Array(Type.Object({ name: Type.String(), description: Type.String() })),
  teams: Type.Array(Type.Object({ id: Type.String(), name: Type.String() })),
  csrf_token: Type.Union([Type.String(), Type.Null()]),
  signed_in: Type.Boolean(),
}), 'With `Accept: application/json`; otherwise the HTML sign-in or consent page')

export const ConsentBody = Type.Object({
  request_id: Type.String({ minLength: 1, maxLength: 128 }),
  decision: Type.Union([Type.Literal('approve'), Type.Literal('deny')]),
  team_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  csrf_token: Type.String({ minLength: 1, maxLength: 128 }),
}, { additionalProperties: false })

export const ConsentLoginBody = Type.Object({
  request_id: Type.String({ minLength: 1, maxLength: 128 }),
  login: Type.String({ minLength: 1, maxLength: 255 }),
  password: Type.String({ minLength: 1, maxLength: 1024 }),
}, { additionalProperties: false })

export const RegisterBody = Type.Object({
  redirect_uris: Type.Array(Type.String({ minLength: 1, maxLength: 2048 }), { minItems: 1, maxItems: 10 }),
  client_name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  scope: text(1024),
  grant_types: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { maxItems: 5 })),
  response_types: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { maxItems: 5 })),
  token_endpoint_auth_method: text(64, 'Only `none`: every client is public and uses PKCE.'),
}, { additionalProperties: false })

export const RegisterAnswer = Protocol({
  client_id: Type.String(),
  client_id_issued_at: Type.Integer(),
  client_name: Type.String(),
  redirect_uris: Type.Array(Type.String()),
  grant_types: Type.Array(Type.String()),
  response_types: Type.Array(Type.String()),
  token_endpoint_auth_method: Type.String(),
  scope: Type.String(),
}, 'RFC 7591 client information response')

export const RevokeAnswer = Protocol({}, 'RFC 7009: 200 whatever the token was')

export const UserinfoAnswer = Protocol({
  sub: Type.String(), email: Type.String(), email_verified: Type.Boolean(), preferred_username: Type.String(), name: Type.String(),
}, 'OpenID Connect userinfo fields, at the top level')

export const MetadataAnswer = Type.Object({ success: Type.Literal(true) }, { additionalProperties: true, description: 'RFC 8414 metadata; issuer = PUBLIC_URL' })

export const DecisionAnswer = Ok(Type.Object({ redirect_url: Type.String() }))
