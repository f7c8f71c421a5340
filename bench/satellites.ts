import { againstBare, type Measurement } from './harness.js'

/**
 * The satellite workloads, against a running server: heartbeats with an API key (one indexed
 * lookup by the key's digest, then one UPDATE per request), and registrations refused for a bad
 * signature (the cost of verifying a JWT, with no database access), each as a ratio to a bare
 * route measured alongside it.
 */
export async function satelliteWorkloads(url: string, cookie: string, bareUrl: string): Promise<Measurement[]> {
  const json = { 'content-type': 'application/json' }
  const created = await fetch(`${url}/api/satellites/global/registration-tokens`, { method: 'POST', headers: { ...json, cookie }, body: '{}' })
  if (created.status !== 201) throw new Error(`token creation failed: ${created.status} ${await created.text()}`)
  const { token } = ((await created.json()) as { data: { token: string } }).data
  const registered = await fetch(`${url}/api/satellites/register`, {
    method: 'POST',
    headers: { ...json, authorization: `Bearer ${token}` },
    body: JSON.stringify({ name: 'bench-edge', system_info: { os: 'linux', arch: 'x64', node_version: process.version, memory_mb: 4096 } }),
  })
  if (registered.status !== 201) throw new Error(`registration failed: ${registered.status} ${await registered.text()}`)
  const { satellite, api_key: apiKey } = ((await registered.json()) as { data: { satellite: { id: string }; api_key: string } }).data

  const heartbeat = await againstBare(bareUrl, 'POST /api/satellites/:id/heartbeat (API key, one UPDATE each)', `${url}/api/satellites/${satellite.id}/heartbeat`, {
    method: 'POST',
    headers: { ...json, authorization: `Bearer ${apiKey}` },
    body: JSON.stringify({ status: 'active', system_metrics: { cpu_usage_percent: 12.5, memory_usage_mb: 512, uptime_seconds: 3600 } }),
  })
  // The token with its signature's last characters changed: refused after the HMAC check (all 401).
  const forged = `${token.slice(0, -4)}${token.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`
  const refused = await againstBare(bareUrl, 'POST /api/satellites/register, forged token (401)', `${url}/api/satellites/register`, {
    method: 'POST',
    headers: { ...json, authorization: `Bearer ${forged}` },
    body: JSON.stringify({ name: 'bench-forged' }),
  })
  return [heartbeat, refused]
}
