import { againstBare, type Measurement } from './harness.js'
import { BENCH_QUOTA, bearerToken, signUp } from './service.js'

/**
 * What the command-line client reads most, with an OAuth access token holding `mcp:read` of a
 * member of three teams that run 50 installations each: the token is bound to one of them at
 * consent, so `GET /api/users/me/mcp/installations` lists that team's 50, as does
 * `GET /api/teams/:teamId/mcp/installations`; and the client configuration MCP clients are set up from.
 *
 * The data goes in through the HTTP API as people put it there: the global admin imports registry
 * documents and creates three teams, adds the member to each as a team_user, registers a satellite
 * with a URL and installs 50 servers per team with the team's values (a secret among them); half
 * of the installations have two user-scoped inputs, and the member sets their own values on most
 * of those (a few are left unset, so the list mixes `needs_config` with `pending`). The member's
 * own default team, which every account has, stays empty.
 */

export const TEAMS = 3
export const PER_TEAM = 50
/** Documents imported; each team installs 50 of them, overlapping the next team's. */
const DOCUMENTS = 80
/** The whole setup must finish within this, or the bench stops with an error instead of hanging. */
const SETUP_BUDGET_MS = 180_000
const MEMBER = 'installs_member'
const SATELLITE_URL = 'https://sat-bench-1.example.test'

/**
 * A registry document (2025-12-11) as publishers write them: a package with several inputs (two of
 * them secret), a remote. `owner` names the publisher, so that each workload imports its own servers.
 */
export function registryDocument(i: number, owner = 'bench-installs'): Record<string, unknown> {
  return {
    $schema: 'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json',
    name: `io.github.${owner}/tool-${i}`,
    title: `Bench tool ${i}`,
    description: `Benchmark tool ${i}: a package with a key, a log level, a cache and a member's token; a remote.`,
    version: '2.3.0',
    repository: { url: `https://github.com/${owner}/tool-${i}`, source: 'github' },
    packages: [{
      registryType: 'npm', identifier: `@${owner}/tool-${i}`, version: '2.3.0', runtimeHint: 'npx', transport: { type: 'stdio' },
      packageArguments: [
        { type: 'named', name: '--port', description: 'Port to listen on', format: 'number', default: '8080' },
        { type: 'positional', valueHint: 'data_dir', description: 'Where the cache lives', format: 'filepath', isRequired: true },
      ],
      environmentVariables: [
        { name: 'API_KEY', description: "The provider's API key", isRequired: true, isSecret: true },
        { name: 'LOG_LEVEL', description: 'How much to log', default: 'info', choices: ['debug', 'info', 'warn'] },
        { name: 'REGION', value: 'eu-west' },
        { name: 'PERSONAL_TOKEN', description: "The member's own token", isRequired: true, isSecret: true },
        { name: 'ACCOUNT_EMAIL', description: "The member's account at the provider", isRequired: true },
      ],
    }],
    remotes: [{
      type: 'streamable-http', url: `https://{tenant}.tool-${i}.example.com/mcp`,
      variables: { tenant: { description: 'Your tenant', isRequired: true, choices: ['acme', 'globex'] } },
      headers: [{ name: 'X-Api-Key', description: 'Your API key', isRequired: true, isSecret: true }],
    }],
  }
}

export interface SeededInstallations {
  /** The member's session cookie and their access token with `mcp:read`. */
  cookie: string
  token: string
  /** The three teams, in the order they were made. */
  teams: string[]
  installations: number
  ms: number
}

/**
 * Seeds the installations of three teams through the API of a running service, as its global
 * admin (`adminCookie`); answers the member's credentials.
 */
export async function seedInstallations(url: string, adminCookie: string): Promise<SeededInstallations> {
  const began = performance.now()
  const deadline = began + SETUP_BUDGET_MS
  const send = async <T>(method: string, path: string, cookie: string, body?: unknown): Promise<T> => {
    if (performance.now() > deadline) throw new Error(`installations setup took over ${SETUP_BUDGET_MS / 1000} s; stopped at ${method} ${path}`)
    const response = await fetch(`${url}${path}`, {
      method, signal: AbortSignal.timeout(30_000),
      headers: { cookie, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
    const text = await response.text()
    if (response.status !== 200 && response.status !== 201) throw new Error(`${method} ${path} answered ${response.status}: ${text.slice(0, 300)}`)
    return (JSON.parse(text) as { data: T }).data
  }

  const imported = await send<{ results: Array<{ server_id?: string; status: string }> }>('POST', '/api/mcp/servers/import', adminCookie, Array.from({ length: DOCUMENTS }, (_, i) => registryDocument(i)))
  const serverIds = imported.results.map((result) => {
    if (result.server_id === undefined) throw new Error(`import: ${JSON.stringify(result)}`)
    return result.server_id
  })

  const memberCookie = await signUp(url, MEMBER)
  // One team's installations all go to one global satellite: past the default quota of 20.
  await send('PUT', '/api/settings/global.team_quota_per_global_satellite', adminCookie, { value: BENCH_QUOTA })
  const { token } = await send<{ token: string }>('POST', '/api/satellites/global/registration-tokens', adminCookie, {})
  const registered = await fetch(`${url}/api/satellites/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ name: 'bench-installs', satellite_url: SATELLITE_URL, system_info: { os: 'linux', arch: 'x64', node_version: process.version, memory_mb: 8192 } }),
  })
  if (registered.status !== 201) throw new Error(`satellite registration answered ${registered.status}: ${await registered.text()}`)
  const satelliteId = ((await registered.json()) as { data: { satellite: { id: string } } }).data.satellite.id

  let installations = 0
  const teams: string[] = []
  for (let t = 0; t < TEAMS; t++) {
    const { team } = await send<{ team: { id: string } }>('POST', '/api/teams', adminCookie, { name: `Installs ${['Platform', 'Data', 'Support'][t]}` })
    teams.push(team.id)
    await send('POST', `/api/teams/${team.id}/members`, adminCookie, { login: MEMBER, role: 'team_user' })
    for (let j = 0; j < PER_TEAM; j++) {
      const server = t * 15 + j
      const perUser = j % 2 === 0
      const teamValues: Record<string, string> = { 'env:API_KEY': `sk-live-${t}-${j}-0f9e8d7c6b5a4938`, 'env:LOG_LEVEL': j % 3 === 0 ? 'debug' : 'warn', 'arg:data_dir': `/var/lib/tool-${server}` }
      if (!perUser) Object.assign(teamValues, { 'env:PERSONAL_TOKEN': `team-token-${t}-${j}`, 'env:ACCOUNT_EMAIL': `team-${t}@example.test` })
      const { installation } = await send<{ installation: { id: string } }>('POST', `/api/teams/${team.id}/mcp/installations`, adminCookie, {
        server_id: serverIds[server], name: `tool-${server}`, satellite_id: satelliteId,
        ...(perUser ? { user_scoped: ['env:PERSONAL_TOKEN', 'env:ACCOUNT_EMAIL'] } : {}),
        values: teamValues,
      })
      installations++
      // The member's own values on most per-user installations; every fifth is left for them to set.
      if (perUser && j % 10 !== 0) {
        await send('PUT', `/api/teams/${team.id}/mcp/installations/${installation.id}/my-values`, memberCookie, {
          values: { 'env:PERSONAL_TOKEN': `ghp-own-${t}-${j}-7a6b5c4d3e2f`, 'env:ACCOUNT_EMAIL': `${MEMBER}@example.test` },
        })
      }
    }
  }
  // An access token is bound to one team at consent (the first here): what it lists is that team's.
  const accessToken = await bearerToken(url, memberCookie, 'mcp:read', { teamId: teams[0] })
  return { cookie: memberCookie, token: accessToken, installations, teams, ms: Math.round(performance.now() - began) }
}

/** The list as the member's token reads it: checks the total and that no secret shows, before it is loaded. */
async function checkAnswer(url: string, token: string, expected: number): Promise<void> {
  const response = await fetch(`${url}/api/users/me/mcp/installations?limit=100`, { headers: { authorization: `Bearer ${token}` } })
  const text = await response.text()
  if (response.status !== 200) throw new Error(`the installations list answered ${response.status}: ${text.slice(0, 300)}`)
  const body = JSON.parse(text) as { data: { installations: Array<{ status: string }>; pagination: { total: number } } }
  if (body.data.pagination.total !== expected) throw new Error(`the member sees ${body.data.pagination.total} installations, not ${expected}`)
  if (/sk-live-|ghp-own-|team-token-/.test(text)) throw new Error('a secret value shows in the installations list')
}

/**
 * The workload: the default page (20) and a page of 100, each against the bare route measured
 * alongside it; the default page has the target.
 */
export async function installationWorkloads(url: string, adminCookie: string, bareUrl: string, targetPercent: number): Promise<{ measurements: Measurement[]; notes: string[] }> {
  const seeded = await seedInstallations(url, adminCookie)
  await checkAnswer(url, seeded.token, PER_TEAM)
  const headers = { authorization: `Bearer ${seeded.token}` }
  const path = `${url}/api/users/me/mcp/installations`
  const label = `a member of ${TEAMS} teams × ${PER_TEAM}, the token bound to one`
  const measurements = [
    await againstBare(bareUrl, `GET /api/teams/:teamId/mcp/installations (bearer mcp:read, ${PER_TEAM} installations, default page of 20)`, `${url}/api/teams/${seeded.teams[0]}/mcp/installations`, { headers }, targetPercent),
    await againstBare(bareUrl, `GET /api/users/me/mcp/installations (bearer mcp:read, ${label}, default page of 20)`, path, { headers }, targetPercent),
    await againstBare(bareUrl, '  the same, ?limit=100', `${path}?limit=100`, { headers }),
    await againstBare(bareUrl, 'GET /api/users/me/mcp/client-config (bearer mcp:read)', `${url}/api/users/me/mcp/client-config`, { headers }),
  ]
  return { measurements, notes: [`installations seeded through the API: ${seeded.installations} in ${(seeded.ms / 1000).toFixed(1)} s`] }
}
