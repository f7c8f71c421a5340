import { Type } from 'typebox'
import { Ok } from '../http/envelope.js'

/** TypeBox schemas of the OAuth 2.0 endpoints; they also write the OpenAPI document. */

export const tags = ['OAuth2']
export const Redirect = Type.Null({ description: '302 with a Location header' })
const text = (maxLength: number, description?: string) => Type.Optional(Type.String({ maxLength, ...(description ? { description } : {}) }))

/**
 * The OAuth protocol endpoints ignore parameters and client metadata they do not know (RFC 6749
 * §3.1 and §3.2, RFC 7591 §2): their top-level objects admit unknown members, which no handler
 * reads, stores or echoes. Their routes declare it (`config.unknownParameters: 'ignore'`), and
 * the route guard allows it on those routes only; known parameters are still validated here.
 */
const IGNORES_UNKNOWN = { additionalProperties: true } as const

/** Protocol responses carry `success` next to the RFC fields. */
export const Protocol = <T extends Parameters<typeof Type.Object>[0]>(properties: T, description?: string) =>
  Type.Object({ success: Type.Literal(true), ...properties }, description ? { description } : {})

export const AuthorizeQuery = Type.Object({
  response_type: text(64, 'Must be `code`.'),
  client_id: text(256),
  redirect_uri: text(2048, 'Exactly one of the client\'s registered redirect URIs.'),
  scope: text(1024, 'Space-separated; defaults to every scope the client registered. Names this service does not know are ignored ' +
    '(RFC 6749 §3.3: MCP clients send a resource\'s own scopes); when no known one is left, the default applies. A known scope the client ' +
    'did not register, or a name with characters outside RFC 6749\'s scope-token (`"`, `\\`, controls, non-ASCII) → `invalid_scope`. ' +
    'The consent page and the token answer\'s `scope` show exactly what was kept.'),
  state: text(1024, 'Optional (PKCE protects the request, RFC 9700 §2.1.1); echoed in the redirect when sent.'),
  code_challenge: text(1024, 'BASE64URL(SHA-256(code_verifier)); 43–128 characters, else an invalid_request redirect.'),
  code_challenge_method: text(16, 'Must be `S256`; `plain` is refused.'),
  resource: text(2048, 'RFC 8707: the absolute URI (no fragment) of the resource the token is for, e.g. an MCP server\'s URL; ' +
    'its tokens work there and nowhere else. Without it, the tokens are for this service\'s API. Else `invalid_target`.'),
  prompt: text(256, '`consent`: ask even if this user approved before; `none`: never show a page (redirects `login_required` or ' +
    '`consent_required`); `login`: sign in again even with a session. Other values are ignored.'),
}, IGNORES_UNKNOWN)

export const TokenBody = Type.Object({
  grant_type: text(64, '`authorization_code` or `refresh_token`'),
  client_id: text(256),
  code: text(256),
  redirect_uri: text(2048),
  code_verifier: text(256),
  refresh_token: text(256),
  scope: text(1024, 'refresh_token grant only: may narrow the granted scope, never widen it (else `invalid_scope`). Names this service ' +
    'does not know are ignored; when no known one is left, the granted scope is kept. A malformed name → `invalid_scope`.'),
  resource: text(2048, 'RFC 8707: when sent, the resource the authorization was bound to (else `invalid_target`).'),
}, IGNORES_UNKNOWN)

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
}, IGNORES_UNKNOWN)

export const IntrospectBody = Type.Object({ token: text(256), token_type_hint: text(32) }, IGNORES_UNKNOWN)

export const IntrospectAnswer = Protocol({
  active: Type.Boolean(),
  scope: Type.Optional(Type.String()),
  client_id: Type.Optional(Type.String()),
  username: Type.Optional(Type.String()),
  sub: Type.Optional(Type.String()),
  exp: Type.Optional(Type.Integer()),
  iat: Type.Optional(Type.Integer()),
  team_id: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  token_type: Type.Optional(Type.String({ description: '`Bearer` for an access token; `refresh_token` for a refresh token (shown to a global admin only).' })),
  iss: Type.Optional(Type.String()),
  aud: Type.Optional(Type.String({ description: 'The resource the token is for (RFC 8707); PUBLIC_URL for tokens of this service\'s API.' })),
}, 'RFC 7662 introspection response; `{active: false}` alone for unknown, expired, revoked or spent tokens, and, to a satellite, for any token but a live access token for its own resource')

export const ConsentQuery = Type.Object({ request_id: Type.String({ minLength: 1, maxLength: 128 }) }, { additionalProperties: false })

export const ConsentDetails = Ok(Type.Object({
  request_id: Type.String(),
  client_id: Type.String(),
  client_name: Type.String(),
  client_uri: Type.Union([Type.String(), Type.Null()], { description: "The client's registered home page, if any." }),
  client_registered: Type.Boolean({ description: 'False for a client that is not registered with this service: its details come from its Client ID Metadata Document.' }),
  client_id_document_host: Type.Union([Type.String(), Type.Null()], {
    description: 'For a client that is not registered: the host serving its metadata document (`client_id` is that document\'s URL). Show it to the user.',
  }),
  resource: Type.Union([Type.String(), Type.Null()], {
    description: 'The resource (RFC 8707) the tokens will be for, as the client asked; null: this service\'s own API.',
  }),
  satellite_name: Type.Union([Type.String(), Type.Null()], {
    description: 'When `resource` is a satellite\'s MCP endpoint (`<satellite_url>/mcp`, or `<satellite_url>/mcp/<installation id>`): that ' +
      'satellite\'s name, for a global satellite or a team satellite of one of the user\'s teams. Null otherwise, and before sign-in.',
  }),
  scopes: Type.Array(Type.Object({ name: Type.String(), description: Type.String() }), {
    description: 'The scopes asked for, each described as what it lets the client do; `mcp:read` names the selected team and, for a satellite\'s ' +
      'resource, the satellite ("Use the MCP servers of team X on satellite Y").',
  }),
  teams: Type.Array(Type.Object({
    id: Type.String(),
    name: Type.String(),
    selected: Type.Boolean({ description: 'The team chosen for the user; exactly one is true. An approval without `team_id` binds this one.' }),
  }), {
    description: 'The user\'s teams (default team first, then by name); empty before sign-in. The selected one is, in order: the team the ' +
      '`resource` names (a team satellite\'s team; for a global satellite, the user\'s team with installations there — the one chosen last for ' +
      'this client, else the one with the most; for an endpoint URL, its installation\'s team), when the user is a member of it; else the team ' +
      'chosen last time for this client; else a team with installations (the default team if it has some); else the default team.',
  }),
  csrf_token: Type.Union([Type.String(), Type.Null()]),
  signed_in: Type.Boolean(),
}), 'With `Accept: application/json`; otherwise the HTML sign-in or consent page')

export const ConsentBody = Type.Object({
  request_id: Type.String({ minLength: 1, maxLength: 128 }),
  decision: Type.Union([Type.Literal('approve'), Type.Literal('deny')]),
  team_id: Type.Optional(Type.String({
    minLength: 1, maxLength: 64,
    description: 'One of the user\'s teams (else 400 INVALID_TEAM). Absent: the team the consent page selected, worked out by the service again.',
  })),
  csrf_token: Type.String({ minLength: 1, maxLength: 128 }),
}, { additionalProperties: false })

export const ConsentLoginBody = Type.Object({
  request_id: Type.String({ minLength: 1, maxLength: 128 }),
  login: Type.String({ minLength: 1, maxLength: 255 }),
  password: Type.String({ minLength: 1, maxLength: 1024 }),
}, { additionalProperties: false })

/** A web page of the client's: http or https with a host. */
const WebUrl = Type.String({ maxLength: 2048, format: 'uri', pattern: '^[Hh][Tt][Tt][Pp][Ss]?://[^\\s/?#@]+' })

export const RegisterBody = Type.Object({
  redirect_uris: Type.Array(Type.String({ minLength: 1, maxLength: 2048 }), { minItems: 1, maxItems: 10 }),
  client_name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  scope: text(1024, 'Space-separated. The client keeps the scopes this service knows; other names are dropped (RFC 7591 §3.2.1), and ' +
    'when none known is left (or `scope` is absent) it gets every scope. The answer\'s `scope` is what was registered. A malformed name → ' +
    '`invalid_client_metadata`.'),
  grant_types: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { maxItems: 5 })),
  response_types: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { maxItems: 5 })),
  token_endpoint_auth_method: text(64, 'Every client is public and uses PKCE: any other method asked for is answered with `none`.'),
  client_uri: Type.Optional(WebUrl),
  logo_uri: Type.Optional(WebUrl),
  tos_uri: Type.Optional(WebUrl),
  policy_uri: Type.Optional(WebUrl),
  contacts: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 256 }), { maxItems: 10 })),
  software_id: text(256),
  software_version: text(256),
}, IGNORES_UNKNOWN)

export const RegisterAnswer = Protocol({
  client_id: Type.String(),
  client_id_issued_at: Type.Integer(),
  client_name: Type.String(),
  redirect_uris: Type.Array(Type.String()),
  grant_types: Type.Array(Type.String()),
  response_types: Type.Array(Type.String()),
  token_endpoint_auth_method: Type.String(),
  scope: Type.String(),
  client_uri: Type.Optional(Type.String()),
  logo_uri: Type.Optional(Type.String()),
  tos_uri: Type.Optional(Type.String()),
  policy_uri: Type.Optional(Type.String()),
  contacts: Type.Optional(Type.Array(Type.String())),
  software_id: Type.Optional(Type.String()),
  software_version: Type.Optional(Type.String()),
}, 'RFC 7591 client information response')

export const RevokeAnswer = Protocol({}, 'RFC 7009: 200 whatever the token was')

export const UserinfoAnswer = Protocol({
  sub: Type.String(), email: Type.String(), email_verified: Type.Boolean(), preferred_username: Type.String(), name: Type.String(),
}, 'OpenID Connect userinfo fields, at the top level')

export const MetadataAnswer = Type.Object({ success: Type.Literal(true) }, { additionalProperties: true, description: 'RFC 8414 metadata; issuer = PUBLIC_URL' })

export const DecisionAnswer = Ok(Type.Object({ redirect_url: Type.String() }))
