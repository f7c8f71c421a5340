import type { LightMyRequestResponse } from 'fastify'
import { expect } from 'vitest'
import type { Account, Call } from './teams.js'

/** What the installation routes answer for one installation (the fields the tests read). */
export interface InputBody {
  key: string
  kind: string
  description: string
  required: boolean
  secret: boolean
  scope: 'team' | 'user'
  default?: string
  choices?: string[]
  format?: string
  is_set: boolean
  value?: string
  /** On the caller's own input whose value was dropped by a move. */
  unset_reason?: string
}

export interface InstallationBody {
  id: string
  team_id: string
  server: { id: string; slug: string; name: string }
  version: string
  track_latest: boolean
  name: string
  target: { kind: 'package' | 'remote'; index: number; transport: string }
  satellite_id: string | null
  desired: 'running' | 'stopped'
  network: 'full' | 'none'
  inputs: InputBody[]
  missing_inputs: string[]
  instance_mode: 'shared' | 'per_user'
  status: string
  status_reason: string
  endpoint_url: string | null
  tools_count: number
  spec_revision: number
  created_by: string
  created_at: string
  updated_at: string
}

export const installationsOf = (teamId: string) => `/api/teams/${teamId}/mcp/installations`
export const installationOf = (teamId: string, id: string) => `/api/teams/${teamId}/mcp/installations/${id}`

/**
 * A registry document (revision 2025-12-11) with two packages and a remote: secret, required,
 * defaulted and choice-restricted environment variables, a header template with a secret
 * variable, named and positional arguments, a remote header and a URL template variable.
 * `name` and `version` make each copy distinct.
 */
export function weatherDocument(name: string, version = '1.4.0'): Record<string, unknown> {
  return {
    $schema: 'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json',
    name,
    description: 'Forecasts and alerts.',
    version,
    packages: [
      {
        registryType: 'npm',
        identifier: '@example/weather-mcp',
        version,
        runtimeHint: 'npx',
        transport: { type: 'stdio' },
        packageArguments: [
          { type: 'named', name: '--port', description: 'Port to listen on', format: 'number', default: '8080' },
          { type: 'positional', valueHint: 'data_dir', description: 'Where forecasts are cached', format: 'filepath', isRequired: true },
        ],
        environmentVariables: [
          { name: 'WEATHER_API_KEY', description: 'Key of the weather provider', isRequired: true, isSecret: true },
          { name: 'LOG_LEVEL', description: 'How much to log', default: 'info', choices: ['debug', 'info', 'warn'] },
          { name: 'REGION', value: 'eu-west' },
          { name: 'PERSONAL_TOKEN', description: "The member's own token", isRequired: true, isSecret: true },
        ],
      },
      {
        registryType: 'pypi',
        identifier: 'weather-mcp',
        version,
        transport: { type: 'stdio' },
        environmentVariables: [{ name: 'WEATHER_DEBUG', format: 'boolean', default: 'false' }],
      },
    ],
    remotes: [
      {
        type: 'streamable-http',
        url: 'https://{tenant}.weather.example.com/mcp',
        variables: { tenant: { description: 'Your tenant', isRequired: true, choices: ['acme', 'globex'] } },
        headers: [
          { name: 'X-Api-Key', description: 'Your API key', isRequired: true, isSecret: true },
          { name: 'X-Client', value: 'catalogue' },
        ],
      },
    ],
  }
}

/** Imports documents as the global admin; answers the server id of each, in order. */
export async function importDocuments(call: Call, admin: Account, documents: Array<Record<string, unknown>>): Promise<string[]> {
  const response = await call('POST', '/api/mcp/servers/import', admin, documents)
  expect(response.statusCode, response.body).toBe(200)
  const results = response.json().data.results as Array<{ status: string; server_id?: string; errors?: unknown }>
  for (const result of results) expect(result.status, JSON.stringify(result)).not.toBe('invalid')
  return results.map((result) => result.server_id!)
}

export function expectCode(response: LightMyRequestResponse, status: number, code: string): void {
  expect(response.statusCode, response.body).toBe(status)
  expect(response.json()).toMatchObject({ success: false, code })
}

/** POST an installation as `account`; 201 or the test fails. */
export async function install(call: Call, teamId: string, account: Account, body: Record<string, unknown>): Promise<InstallationBody> {
  const response = await call('POST', installationsOf(teamId), account, body)
  expect(response.statusCode, response.body).toBe(201)
  return response.json().data.installation
}
