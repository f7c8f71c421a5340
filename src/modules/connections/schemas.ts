import { Type, type Static } from 'typebox'
import { Nullable, Ok } from '../../http/envelope.js'

const closed = { additionalProperties: false } as const
const Id = Type.String({ minLength: 1, maxLength: 100 })
const Timestamp = Type.String({ format: 'date-time' })
const OAuthKey = Type.String({
  minLength: 7, maxLength: 2100, pattern: '^oauth:\\S+$',
  description: 'The oauth input\'s key: `oauth:` and the remote server\'s canonical URI (percent-encoded in a path).',
})

// Requests

export const InstallationParams = Type.Object({ teamId: Id, id: Id }, closed)
export const ConnectionParams = Type.Object({ teamId: Id, id: Id, key: OAuthKey }, closed)
export const IssuerParams = Type.Object({
  issuer: Type.String({ minLength: 8, maxLength: 2048, pattern: '^[Hh][Tt][Tt][Pp][Ss]?://\\S+$', description: 'The issuer identifier, percent-encoded (`https%3A%2F%2Fauth.example.com`).' }),
}, closed)

export const ConnectBody = Type.Object({
  key: Type.Optional(OAuthKey),
  return_to: Type.Optional(Type.String({
    minLength: 1, maxLength: 2048,
    description: 'Where the callback page links back to: a path on this service or a URL on `global.page_url`\'s origin; anything else is ignored (the account page is linked instead).',
  })),
}, { ...closed, description: '`key` is required when the installation has more than one oauth input.' })
export type ConnectBody = Static<typeof ConnectBody>

export const CallbackQuery = Type.Object({
  code: Type.Optional(Type.String({ maxLength: 4096 })),
  state: Type.Optional(Type.String({ maxLength: 512 })),
  iss: Type.Optional(Type.String({ maxLength: 2048 })),
  error: Type.Optional(Type.String({ maxLength: 256 })),
  error_description: Type.Optional(Type.String({ maxLength: 2048 })),
  error_uri: Type.Optional(Type.String({ maxLength: 2048 })),
}, { additionalProperties: true, description: 'The authorization response (RFC 6749 §4.1.2, RFC 9207 `iss`); other parameters are ignored.' })

export const ClientBody = Type.Object({
  client_id: Type.String({ minLength: 1, maxLength: 512 }),
  client_secret: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, description: 'Write-only: never shown again (`has_secret`).' })),
  token_endpoint_auth_method: Type.Optional(Type.Union([Type.Literal('none'), Type.Literal('client_secret_basic'), Type.Literal('client_secret_post')], {
    description: 'Default `client_secret_basic` with a secret, `none` without.',
  })),
}, closed)
export type ClientBody = Static<typeof ClientBody>

// Answers

const Status = Type.Union([Type.Literal('connected'), Type.Literal('expired'), Type.Literal('missing')], {
  description: '`connected`: tokens held (and refreshed before they expire); `expired`: the authorization server refused to refresh them — connect again; `missing`: never connected.',
})
const connectionFields = {
  key: Type.String(),
  scope: Type.Union([Type.Literal('team'), Type.Literal('user')], { description: '`team`: one account for the team, connected by a team admin; `user`: each member\'s own.' }),
  status: Status,
  account: Nullable(Type.String({ description: 'Who signed in at the authorization server (an email, a login), when it says.' })),
  scopes: Type.Array(Type.String(), { description: 'The scopes granted.' }),
  expires_at: Nullable(Type.String({ format: 'date-time', description: 'When the current access token expires (it is refreshed before); null when the server gave no lifetime.' })),
  connected_at: Nullable(Timestamp),
}
export const ConnectionView = Type.Object(connectionFields, closed)
export const MyConnectionView = Type.Object({ installation_id: Type.String(), team_id: Type.String(), ...connectionFields }, closed)

export const ConnectAnswer = Ok(Type.Object({
  authorization_url: Type.String({ description: 'Open this in the browser: the authorization server\'s sign-in, which comes back to the callback page.' }),
}, closed))
export const ConnectionsAnswer = Ok(Type.Object({ connections: Type.Array(ConnectionView) }, closed))
export const MyConnectionsAnswer = Ok(Type.Object({ connections: Type.Array(MyConnectionView) }, closed))

const UpstreamClientView = Type.Object({
  issuer: Type.String(),
  method: Type.Union([Type.Literal('dynamic'), Type.Literal('manual')], { description: '`dynamic`: registered by this service (RFC 7591); `manual`: entered by a global admin.' }),
  client_id: Type.String(),
  token_endpoint_auth_method: Type.String(),
  has_secret: Type.Boolean(),
  registered_at: Timestamp,
  updated_at: Timestamp,
}, closed)
export const UpstreamClientAnswer = Ok(Type.Object({ client: UpstreamClientView }, closed))
export const UpstreamClientsAnswer = Ok(Type.Object({ clients: Type.Array(UpstreamClientView) }, closed))

export const ClientDocument = Type.Object({
  client_id: Type.String(),
  client_name: Type.String(),
  client_uri: Type.String(),
  redirect_uris: Type.Array(Type.String()),
  grant_types: Type.Array(Type.String()),
  response_types: Type.Array(Type.String()),
  token_endpoint_auth_method: Type.String(),
}, { description: 'The client ID metadata document (draft-ietf-oauth-client-id-metadata-document): not enveloped, as authorization servers read it.' })

export const Page = { description: 'An HTML page (no script, a strict Content-Security-Policy).', content: { 'text/html': { schema: Type.String() } } }
