/**
 * The documents the backend sends a satellite and the reports it takes back, as they travel on
 * the wire (snake_case, as in the JSON).
 */

/** An argv entry: a literal, or the slot of a secret value delivered in `secrets`. */
export type Arg = string | { secret: string }

export interface PackageLaunch {
  kind: 'package'
  registry_type: 'npm' | 'pypi' | 'oci' | 'docker' | 'nuget' | 'mcpb'
  identifier: string
  version: string | null
  runtime_hint: string | null
  runtime_args: Arg[]
  package_args: Arg[]
  env: Record<string, string>
  transport: { type: 'stdio' | 'streamable-http' | 'sse'; url?: string; headers?: Record<string, string> }
}

export interface RemoteLaunch {
  kind: 'remote'
  url: string
  transport: 'streamable-http' | 'sse'
  headers: Record<string, string>
}

export interface SealedSecret {
  /** `env:NAME`, `arg:<key>`, `header:<Name>` or `urlvar:<name>`. */
  target: string
  /** base64url of HPKE `enc || ciphertext`. */
  sealed: string
  /**
   * A value the backend renews while the instance runs (an OAuth access token): left out of
   * spec_hash, so a new one is swapped in place rather than restarting anything.
   */
  rotating?: true
}

export interface Instance {
  instance_id: string
  installation_id: string
  team_id: string
  /** Null: one instance shared by the whole team. */
  user_id: string | null
  name: string
  endpoint_path: string
  desired: 'running' | 'stopped'
  spec_hash: string
  restart_generation: number
  launch: PackageLaunch | RemoteLaunch
  secrets: SealedSecret[]
  /** The tools clients may neither see nor call: those an admin disabled, and those held for approval. */
  disabled_tools: string[]
  /** The only tools clients may see and call, when the installation has an allow-list; null or absent: no allow-list. */
  allowed_tools?: string[] | null
  /** Whether only approved tool definitions are offered and served. Absent (a backend from before the field): false. */
  pin_tools?: boolean
  /** The approved definitions, by definition hash (tool-hash.ts); under `pin_tools`, nothing else is offered. */
  pinned_tools?: PinnedTool[]
  /** `none`: the process gets no network at all. Absent (a backend from before the field): `full`. */
  network?: 'full' | 'none'
}

export interface PinnedTool {
  name: string
  hash: string
}

/** What a satellite enforces between its instances, as registration and heartbeats advertise it. */
export type Isolation = 'none' | 'process-sandbox' | 'container'

export interface DesiredState {
  revision: string
  poll_interval_seconds: number
  instances: Instance[]
}

export type Phase = 'starting' | 'running' | 'degraded' | 'failed' | 'stopped'

export interface ObservedInstance {
  instance_id: string
  spec_hash: string
  phase: Phase
  message?: string
  started_at?: string
}

export interface ReportedTool {
  name: string
  title?: string
  description?: string
  input_schema: object
  /** The schema of the tool's structured result, when the server declares one. */
  output_schema?: object
  annotations?: object
}

/**
 * One `tools/call` a client made, served or refused: who, which tool, how it ended and how long it
 * took — never its arguments or its result.
 */
export interface ToolCallRecord {
  at: string
  /** The token's subject; null when it has none. */
  user_id: string | null
  /** The OAuth client the token was issued to; null when introspection does not say. */
  client_id: string | null
  tool: string
  /** `error`: a JSON-RPC error, a result marked `isError`, or no answer at all. */
  outcome: 'ok' | 'error' | 'refused'
  duration_ms: number
}

export interface LogLine {
  at: string
  stream: 'stdout' | 'stderr' | 'event'
  text: string
}

/** What RFC 7662 introspection answers about a client's token (the fields this satellite reads). */
export interface TokenClaims {
  active: boolean
  /** `Bearer` for an access token; anything else is not admitted. */
  token_type?: string
  sub?: string
  username?: string
  scope?: string
  aud?: string | string[]
  team_id?: string | null
  exp?: number
  iat?: number
  client_id?: string
}
