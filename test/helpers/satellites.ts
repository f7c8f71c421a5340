import { expect } from 'vitest'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { ROOMY_LIMITS, type Account, type Call } from './teams.js'
import { SignJWT } from 'jose'
import { deriveKey } from '../../src/lib/keys.js'
import { TEST_SECRET } from './app.js'

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
  isolation: 'none' | 'process-sandbox' | 'container'
  runtimes: string[]
  public_key_fingerprint: string | null
  public_key_changed_at: string | null
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

// ---- Registration-token forgery (registration-tokens.test.ts, register.test.ts) ----

/** The HS256 key registration tokens are signed with in tests: HKDF of TEST_SECRET for 'registration-jwt'. */
export function registrationKey(): Uint8Array {
  return new Uint8Array(deriveKey(TEST_SECRET, 'registration-jwt'))
}

/** The JWT inside `service_satellite_<scope>_<JWT>`. */
export function jwtOf(token: string): string {
  const match = /^service_satellite_(?:global|team)_(.+)$/.exec(token)
  if (match === null) throw new Error(`not a registration token: ${token}`)
  return match[1]!
}

/**
 * Signs arbitrary claims (nothing added: pass `iss`, `aud`, `jti`, `iat`, `exp` yourself), with
 * the service's key unless `key` is given, HS256 unless `alg` is given.
 */
export function signRegistrationJwt(claims: Record<string, unknown>, options: { key?: Uint8Array; alg?: string } = {}): Promise<string> {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: options.alg ?? 'HS256', typ: 'JWT' })
    .sign(options.key ?? registrationKey())
}

/** An unsigned JWT (`alg: none`): header and payload, empty signature. */
export function unsignedJwt(claims: Record<string, unknown>): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url')
  return `${part({ alg: 'none', typ: 'JWT' })}.${part(claims)}.`
}

/** Roomy limits for files that register users and satellites by the dozen (the limits stay on). */
export const SATELLITE_LIMITS = { ...ROOMY_LIMITS, satelliteRegistration: { max: 10_000, windowMs: 60_000 } }

export type RefusalReason =
  | 'malformed' | 'bad_signature' | 'algorithm_not_allowed' | 'wrong_issuer' | 'wrong_audience'
  | 'invalid_claims' | 'scope_mismatch' | 'expired' | 'unknown' | 'used' | 'revoked'

/** 401 INVALID_REGISTRATION_TOKEN with that reason (or one of those) and the bearer challenge. */
export function expectRefused(response: LightMyRequestResponse, reason: RefusalReason | RefusalReason[]): void {
  expect(response.statusCode, response.body).toBe(401)
  const body = response.json()
  expect(body).toMatchObject({ success: false, code: 'INVALID_REGISTRATION_TOKEN' })
  if (Array.isArray(reason)) expect(reason).toContain(body.details?.reason)
  else expect(body.details).toEqual({ reason })
  expect(response.headers['www-authenticate']).toBe('Bearer error="invalid_token"')
}

/** 400 VALIDATION_ERROR with at least one field named. */
export function expectValidationError(response: LightMyRequestResponse): void {
  expect(response.statusCode, response.body).toBe(400)
  const body = response.json()
  expect(body).toMatchObject({ success: false, code: 'VALIDATION_ERROR' })
  expect(Array.isArray(body.details)).toBe(true)
  expect(body.details.length).toBeGreaterThan(0)
}
