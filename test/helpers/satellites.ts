import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import type { Account, Call } from './teams.js'

/** A registration token as POST …/registration-tokens answers it. */
export interface CreatedToken { token: string; id: string; scope: 'global' | 'team'; team_id: string | null; expires_at: string }

/** A satellite as the management routes show it. */
export interface SatelliteBody {
  id: string
  name: string
  satellite_type: 'global' | 'team'
  team_id: string | null
  status: 'inactive' | 'active' | 'degraded' | 'error' | 'offline' | 'disabled'
  capabilities: string[]
  satellite_url: string | null
  system_info: { os: string; arch: string; node_version: string; memory_mb: number } | null
  system_metrics: { cpu_usage_percent: number; memory_usage_mb: number; uptime_seconds?: number } | null
  version: string | null
  last_heartbeat_at: string | null
  registered_at: string
  created_at: string
  updated_at: string
}

export interface Paired { id: string; name: string; apiKey: string }

export const SYSTEM_INFO = { os: 'linux', arch: 'x64', node_version: 'v20.11.0', memory_mb: 4096 }
export const METRICS = { cpu_usage_percent: 12.5, memory_usage_mb: 512, uptime_seconds: 3600 }

/** Creates a global token (no `teamId`) or a team token as `by`; fails loudly unless 201. */
export async function createToken(call: Call, by: Account, options: { teamId?: string; hours?: number } = {}): Promise<CreatedToken> {
  const url = options.teamId === undefined ? '/api/satellites/global/registration-tokens' : `/api/teams/${options.teamId}/satellites/registration-tokens`
  const response = await call('POST', url, by, options.hours === undefined ? {} : { expires_in_hours: options.hours })
  if (response.statusCode !== 201) throw new Error(`token creation failed: ${response.statusCode} ${response.body}`)
  return response.json().data
}

/** POST /api/satellites/register with `authorization` (a full `Bearer …` value). */
export function registerWith(app: FastifyInstance, authorization: string | undefined, payload: object, remoteAddress?: string): Promise<LightMyRequestResponse> {
  return app.inject({
    method: 'POST', url: '/api/satellites/register', payload,
    headers: authorization === undefined ? {} : { authorization },
    ...(remoteAddress === undefined ? {} : { remoteAddress }),
  })
}

/** Registers `name` with a registration token; fails loudly unless 201. */
export async function pair(app: FastifyInstance, token: string, name: string, extra: object = {}): Promise<Paired> {
  const response = await registerWith(app, `Bearer ${token}`, { name, system_info: SYSTEM_INFO, ...extra })
  if (response.statusCode !== 201) throw new Error(`registration failed: ${response.statusCode} ${response.body}`)
  const { satellite, api_key: apiKey } = response.json().data
  return { id: satellite.id, name: satellite.name, apiKey }
}

/** POST /api/satellites/:id/heartbeat with an API key. */
export function heartbeat(app: FastifyInstance, id: string, apiKey: string, payload: object = { status: 'active', system_metrics: METRICS }): Promise<LightMyRequestResponse> {
  return app.inject({ method: 'POST', url: `/api/satellites/${id}/heartbeat`, headers: { authorization: `Bearer ${apiKey}` }, payload })
}
