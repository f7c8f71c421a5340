import { Type } from 'typebox'
import { Nullable, Ok, OkMessage, Pagination, PaginationQuery } from '../../http/envelope.js'
import { HttpUrl } from '../../formats/catalogue-entries.js'

const closed = { additionalProperties: false } as const
const Timestamp = Type.String({ format: 'date-time' })
const Id = Type.String({ minLength: 1, maxLength: 100 })
const Scope = Type.Union([Type.Literal('global'), Type.Literal('team')])

export const Done = OkMessage
export const IdParams = Type.Object({ id: Id }, closed)
export const TeamParams = Type.Object({ teamId: Id }, closed)

// Registration tokens

export const CreateTokenBody = Type.Object({
  expires_in_hours: Type.Optional(Type.Integer({
    minimum: 1, maximum: 72,
    description: 'Lifetime in whole hours, at most 72. Default: 1 for a global token, 24 for a team token.',
  })),
}, closed)

export const TokenStatus = Type.Union([Type.Literal('active'), Type.Literal('used'), Type.Literal('revoked'), Type.Literal('expired')], {
  description: '`used` once a satellite registered with it; `revoked` by an admin; `expired` past `expires_at` unused; else `active`.',
})

export const CreatedTokenEnvelope = Ok(Type.Object({
  token: Type.String({ description: 'Shown once: `service_satellite_<scope>_<JWT>`. Only its `id` (the JWT `jti`) is stored.' }),
  id: Type.String(),
  scope: Scope,
  team_id: Nullable(Type.String()),
  expires_at: Timestamp,
}))

export const TokenView = Type.Object({
  id: Type.String({ description: 'The JWT `jti`.' }),
  scope: Scope,
  team_id: Nullable(Type.String()),
  created_by: Type.String({ description: 'The id of the user who created it.' }),
  status: TokenStatus,
  expires_at: Timestamp,
  used_at: Nullable(Type.String({ format: 'date-time' })),
  used_by_satellite_id: Nullable(Type.String()),
  revoked_at: Nullable(Type.String({ format: 'date-time' })),
  created_at: Timestamp,
})

export const TokensEnvelope = Ok(Type.Object({ tokens: Type.Array(TokenView), pagination: Pagination }))

export const TeamTokensQuery = Type.Object({ ...PaginationQuery, status: Type.Optional(TokenStatus) }, closed)
export const TokensQuery = Type.Object({
  ...PaginationQuery,
  status: Type.Optional(TokenStatus),
  scope: Type.Optional(Scope),
  team_id: Type.Optional(Id),
}, closed)

// Satellites

export const SatelliteName = Type.String({
  minLength: 3, maxLength: 64, pattern: '^[a-z0-9][a-z0-9_-]*$',
  description: 'Lowercase letters, digits, `-` and `_`, starting with a letter or digit; unique across the service.',
})

const SystemInfo = Type.Object({
  os: Type.String({ minLength: 1, maxLength: 64 }),
  arch: Type.String({ minLength: 1, maxLength: 32 }),
  node_version: Type.String({ minLength: 1, maxLength: 32 }),
  memory_mb: Type.Integer({ minimum: 0, maximum: 1_000_000_000 }),
}, closed)

const SystemMetrics = Type.Object({
  cpu_usage_percent: Type.Number({ minimum: 0, maximum: 100 }),
  memory_usage_mb: Type.Number({ minimum: 0, maximum: 1_000_000_000 }),
  uptime_seconds: Type.Optional(Type.Number({ minimum: 0, maximum: 100_000_000_000 })),
}, closed)

/** A raw 32-byte X25519 public key in base64url without padding: 43 characters. */
export const PublicKey = Type.String({
  pattern: '^[A-Za-z0-9_-]{42}[AEIMQUYcgkosw048]$',
  description: 'base64url (no padding) of a raw X25519 public key (32 bytes): the secrets in its desired-state documents are sealed to it. Without one, the satellite is given no instance that has secrets.',
})

const ISOLATION_TEXT = 'How the satellite keeps its instances apart: `process-sandbox` (each in its own sandbox: own PID, IPC, UTS and mount namespaces, read-only system), ' +
  '`container` (each in its own container) or `none` (plain child processes). Team-defined servers run on a global satellite only when it is not `none` ' +
  '(and `global.team_servers_on_global_satellites` allows it).'
const RUNTIMES_TEXT = 'The runtimes it can launch packages with (`node`, `npx`, `uvx`, `docker`, …): lower-case names of at most 32 characters, at most 20 of them. ' +
  'Informative: placement does not read them.'

/** How a satellite keeps its instances apart, as it reports it. */
const isolation = (more = '') => Type.Union([Type.Literal('none'), Type.Literal('process-sandbox'), Type.Literal('container')], { description: `${ISOLATION_TEXT}${more}` })
/** The runtimes a satellite says it can launch packages with. */
const runtimes = (more = '') => Type.Array(Type.String({ pattern: '^[a-z0-9][a-z0-9._-]{0,31}$' }), { maxItems: 20, uniqueItems: true, description: `${RUNTIMES_TEXT}${more}` })

export const RegisterBody = Type.Object({
  name: SatelliteName,
  capabilities: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: 50, uniqueItems: true })),
  satellite_url: Type.Optional(Type.String({
    maxLength: 2048, format: 'uri', pattern: '^[Hh][Tt][Tt][Pp][Ss]?://[^\\s/?#@]+[^\\s?#]*$',
    description: 'The base URL of the MCP endpoints it serves (`<satellite_url>/mcp/<installation id>`): https, or http on a loopback host (127.0.0.1, [::1], localhost).',
  })),
  system_info: Type.Optional(SystemInfo),
  public_key: Type.Optional(PublicKey),
  isolation: Type.Optional(isolation(' Default `none`.')),
  runtimes: Type.Optional(runtimes(' Default none (`[]`).')),
}, closed)

export const HeartbeatBody = Type.Object({
  status: Type.Union([Type.Literal('active'), Type.Literal('degraded'), Type.Literal('error')]),
  system_metrics: SystemMetrics,
  version: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  isolation: Type.Optional(isolation(" Absent: unchanged. A global satellite that reports `none` gives up its team-defined servers' installations at once (they are placed again elsewhere, or wait).")),
  runtimes: Type.Optional(runtimes(' Absent: unchanged.')),
}, closed)

export const SatelliteStatus = Type.Union([
  Type.Literal('inactive'), Type.Literal('active'), Type.Literal('degraded'), Type.Literal('error'), Type.Literal('offline'), Type.Literal('disabled'),
], {
  description: '`inactive` until the first heartbeat; then what the last heartbeat reported; `offline` after 90 s without one; `disabled` by an admin.',
})

export const SatelliteView = Type.Object({
  id: Type.String(),
  name: Type.String(),
  satellite_type: Scope,
  team_id: Nullable(Type.String()),
  status: SatelliteStatus,
  capabilities: Type.Array(Type.String()),
  satellite_url: Nullable(Type.String()),
  system_info: Nullable(SystemInfo),
  system_metrics: Nullable(SystemMetrics),
  version: Nullable(Type.String()),
  isolation: isolation(),
  runtimes: runtimes(),
  public_key_fingerprint: Nullable(Type.String({ description: '`sha256:` and the base64url of the SHA-256 of its raw 32-byte public key; null while it has none.' })),
  public_key_changed_at: Nullable(Type.String({ format: 'date-time', description: 'When its public key was last replaced (not first set); null: never replaced.' })),
  last_heartbeat_at: Nullable(Type.String({ format: 'date-time' })),
  disabled_at: Nullable(Type.String({ format: 'date-time', description: 'Since when an admin has it disabled.' })),
  registered_at: Timestamp,
  created_at: Timestamp,
  updated_at: Timestamp,
})

export const RegisteredEnvelope = Ok(Type.Object({
  satellite: Type.Object({ id: Type.String(), name: Type.String(), satellite_type: Scope, team_id: Nullable(Type.String()), status: SatelliteStatus }),
  api_key: Type.String({ description: 'Shown once: `service_satkey_…`. Send it as `Authorization: Bearer` on the satellite routes.' }),
}))

export const HeartbeatEnvelope = Ok(Type.Object({
  satellite: Type.Object({
    id: Type.String(),
    satellite_type: Type.Union([Type.Literal('global'), Type.Literal('team')], {
      description: 'Whom it serves: a satellite that kept no type from its registration learns here whether it serves several teams (and so guards its egress).',
    }),
    status: SatelliteStatus,
    last_heartbeat_at: Type.String({ format: 'date-time' }),
  }),
  heartbeat_interval_seconds: Type.Integer({ description: 'When to send the next heartbeat.' }),
}))

export const SatelliteEnvelope = Ok(Type.Object({ satellite: SatelliteView }))
export const SatellitesEnvelope = Ok(Type.Object({ satellites: Type.Array(SatelliteView), pagination: Pagination }))

export const SatellitesQuery = Type.Object({
  ...PaginationQuery,
  status: Type.Optional(SatelliteStatus),
  satellite_type: Type.Optional(Scope),
  team_id: Type.Optional(Id),
}, closed)
export const TeamSatellitesQuery = Type.Object({ ...PaginationQuery, status: Type.Optional(SatelliteStatus) }, closed)

export const UpdateSatelliteBody = Type.Object({
  status: Type.Union([Type.Literal('disabled'), Type.Literal('active')], {
    description: '`disabled` refuses its key (403) until set back to `active`.',
  }),
}, closed)
