import type { FastifyInstance } from 'fastify'
import { expect, onTestFinished } from 'vitest'
import { createToken, heartbeat, METRICS, pair, type Paired } from './satellites.js'
import type { Account, Call } from './teams.js'

/** The rules placement follows (test/installations/placement-*.test.ts). */

export type Isolation = 'none' | 'process-sandbox' | 'container'

/** An instance of a desired-state document, as far as these tests read it. */
export interface DocumentInstance {
  instance_id: string
  installation_id: string
  user_id: string | null
  network: 'full' | 'none'
  spec_hash: string
  secrets: Array<{ target: string; sealed: string }>
}

/** The id of the caller's default team (every sign-up has one, and is its team_admin). */
export async function defaultTeamOf(call: Call, account: Account): Promise<string> {
  const response = await call('GET', '/api/users/me/teams', account)
  expect(response.statusCode, response.body).toBe(200)
  const teams = response.json().data.teams as Array<{ id: string; is_default: boolean; role: string }>
  const own = teams.find((team) => team.is_default)!
  expect(own.role).toBe('team_admin')
  return own.id
}

/** A server the team defines itself (visibility `team`), with an active version; nothing to configure. */
export async function defineTeamServer(call: Call, teamId: string, by: Account, name: string): Promise<string> {
  const created = await call('POST', `/api/teams/${teamId}/mcp/servers`, by, { name, packages: [{ registry_type: 'npm', identifier: '@team/tool' }] })
  expect(created.statusCode, created.body).toBe(201)
  const serverId = created.json().data.server.id as string
  const version = await call('POST', `/api/teams/${teamId}/mcp/servers/${serverId}/versions`, by, { version: '1.0.0' })
  expect(version.statusCode, version.body).toBe(201)
  return serverId
}

/**
 * A global satellite with that isolation, online (one heartbeat) unless `online: false`. It is
 * deleted when the test ends, so that the next test's automatic placements do not see it.
 */
export async function globalSatellite(app: FastifyInstance, call: Call, admin: Account, name: string, options: { isolation?: Isolation; online?: boolean; extra?: object } = {}): Promise<Paired> {
  const satellite = await pair(app, (await createToken(call, admin)).token, name, { ...(options.isolation === undefined ? {} : { isolation: options.isolation }), ...options.extra })
  if (options.online !== false) expect((await heartbeat(app, satellite.id, satellite.apiKey)).statusCode).toBe(200)
  onTestFinished(async () => {
    const deleted = await call('DELETE', `/api/satellites/${satellite.id}`, admin)
    expect([200, 404]).toContain(deleted.statusCode)
  })
  return satellite
}

/** A heartbeat that reports `isolation` (and is active). */
export async function reportIsolation(app: FastifyInstance, satellite: Paired, isolation: Isolation): Promise<void> {
  const response = await heartbeat(app, satellite.id, satellite.apiKey, { status: 'active', system_metrics: METRICS, isolation })
  expect(response.statusCode, response.body).toBe(200)
}

/** Sets a setting through the API as `admin`, back to `restore` when the test ends. */
export async function withSetting(call: Call, admin: Account, key: string, value: boolean | number, restore: boolean | number): Promise<void> {
  const set = async (to: boolean | number) => {
    const response = await call('PUT', `/api/settings/${key}`, admin, { value: to })
    expect(response.statusCode, response.body).toBe(200)
  }
  await set(value)
  onTestFinished(() => set(restore))
}

export const TEAM_SERVERS_SETTING = 'global.team_servers_on_global_satellites'
export const QUOTA_SETTING = 'global.team_quota_per_global_satellite'

/** The satellite's desired-state document now. */
export async function documentOf(app: FastifyInstance, satellite: Paired): Promise<DocumentInstance[]> {
  const response = await app.inject({ method: 'GET', url: `/api/satellites/${satellite.id}/desired-state`, headers: { authorization: `Bearer ${satellite.apiKey}` } })
  expect(response.statusCode, response.body).toBe(200)
  return response.json().data.instances
}

/** The installations a satellite's document runs. */
export async function installationsIn(app: FastifyInstance, satellite: Paired): Promise<string[]> {
  return [...new Set((await documentOf(app, satellite)).map((instance) => instance.installation_id))]
}
