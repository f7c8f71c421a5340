import { bearerToken, PASSWORD, signUp } from './service.js'

/**
 * How soon a change to a credential counts, with two instances of the service on one database:
 * a logout, an access token's revocation (RFC 7009) and a role change are made on instance A, and
 * each is then looked for, request after request, on instance B, which had just answered the same
 * credential (so it held the answer in memory). Measured from the change's answer on A to B's first
 * answer that reflects it; A's own next request must reflect it at once. On PostgreSQL B learns
 * of the change through the database's notification; on SQLite (a second process on the same
 * file) through the change stamp it reads on every request.
 *
 * Also the share of credential lookups answered from memory, from the service's metrics.
 */

/** The metrics scraper's token the bench starts the service with. */
export const METRICS_TOKEN = 'bench-metrics-token-0123456789'
const SAMPLES = Number(process.env.BENCH_REVOCATION_SAMPLES ?? 100)
/** A change B has not reflected within this is reported as missed, not waited for longer. */
const GIVE_UP_MS = 5_000
const TARGET_P99_MS = 100

interface Quantiles { p50: number; p99: number; max: number; samples: number }

export interface RevocationResult {
  change: string
  other_instance_ms: Quantiles
  /** Of the samples, how many times A's own next request already reflected the change (all, or the promise is broken). */
  same_instance_at_once: number
  missed: number
  target_p99_ms: number
}

const quantiles = (values: number[]): Quantiles => {
  const sorted = [...values].sort((x, y) => x - y)
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN
  const round = (value: number) => Math.round(value * 100) / 100
  return { p50: round(at(0.5)), p99: round(at(0.99)), max: round(sorted.at(-1) ?? Number.NaN), samples: sorted.length }
}

async function call(url: string, path: string, init: RequestInit = {}): Promise<Response> {
  const response = await fetch(`${url}${path}`, init)
  await response.arrayBuffer()
  return response
}

async function login(url: string, username: string): Promise<string> {
  const response = await fetch(`${url}/api/auth/email/login`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ login: username, password: PASSWORD }),
  })
  if (response.status !== 200) throw new Error(`login failed: ${response.status} ${await response.text()}`)
  return response.headers.getSetCookie()[0]!.split(';')[0]!
}

/**
 * One change: `prepare` makes the credential and has both instances answer it twice, `change`
 * makes the change on A, and `reflects` says whether an answer shows it.
 */
async function measure(
  change: string,
  a: string,
  b: string,
  step: {
    prepare: (index: number) => Promise<RequestInit>
    change: (init: RequestInit, index: number) => Promise<void>
    read: string
    reflects: (response: Response, body: string, index: number) => boolean
  },
): Promise<RevocationResult> {
  const delays: number[] = []
  let atOnce = 0
  let missed = 0
  for (let index = 0; index < SAMPLES; index++) {
    const init = await step.prepare(index)
    for (const url of [a, a, b, b]) await call(url, step.read, init)
    await step.change(init, index)
    const answered = performance.now()
    const seen = async (url: string) => {
      const response = await fetch(`${url}${step.read}`, init)
      return step.reflects(response, await response.text(), index)
    }
    if (await seen(a)) atOnce++
    let reflected = false
    while (performance.now() - answered < GIVE_UP_MS) {
      if (await seen(b)) {
        reflected = true
        break
      }
    }
    if (reflected) delays.push(performance.now() - answered)
    else missed++
  }
  return { change, other_instance_ms: quantiles(delays), same_instance_at_once: atOnce, missed, target_p99_ms: TARGET_P99_MS }
}

export async function revocationWorkloads(a: string, b: string, adminCookie: string): Promise<RevocationResult[]> {
  const username = `revoked-${Date.now()}`
  const cookie = await signUp(a, username)
  const userId = ((await (await fetch(`${a}/api/users/me`, { headers: { cookie } })).json()) as { data: { id: string } }).data.id
  const results: RevocationResult[] = []
  results.push(await measure('logout', a, b, {
    prepare: async () => ({ headers: { cookie: await login(a, username) } }),
    change: async (init) => {
      const response = await call(a, '/api/auth/logout', { method: 'POST', headers: init.headers })
      if (response.status !== 200) throw new Error(`logout failed: ${response.status}`)
    },
    read: '/api/users/me',
    reflects: (response) => response.status === 401,
  }))
  results.push(await measure('access token revoked (RFC 7009)', a, b, {
    prepare: async () => ({ headers: { authorization: `Bearer ${await bearerToken(a, cookie, 'user:read')}` } }),
    change: async (init) => {
      const token = (init.headers as Record<string, string>).authorization!.slice('Bearer '.length)
      const response = await call(a, '/api/oauth2/revoke', {
        method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token, client_id: 'service-gateway-cli' }),
      })
      if (response.status !== 200) throw new Error(`revocation failed: ${response.status}`)
    },
    read: '/api/users/me',
    reflects: (response) => response.status === 401,
  }))
  const roleOf = (index: number) => (index % 2 === 0 ? 'global_admin' : 'global_user')
  results.push(await measure('role changed', a, b, {
    prepare: async () => ({ headers: { cookie } }),
    change: async (_init, index) => {
      const response = await call(a, `/api/admin/users/${userId}/role`, {
        method: 'PUT', headers: { cookie: adminCookie, 'content-type': 'application/json' }, body: JSON.stringify({ role_id: roleOf(index) }),
      })
      if (response.status !== 200) throw new Error(`role change failed: ${response.status}`)
    },
    read: '/api/users/me',
    reflects: (response, body, index) => response.status === 200 && (JSON.parse(body) as { data: { role_id: string } }).data.role_id === roleOf(index),
  }))
  return results
}

/** The credential lookups' hits, misses and bypasses since the service started, from its metrics. */
export async function keptAnswerCounts(url: string): Promise<Record<string, { hit: number; miss: number; bypassed: number }> | null> {
  const response = await fetch(`${url}/api/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
  if (response.status !== 200) throw new Error(`metrics: ${response.status}`)
  const counts: Record<string, { hit: number; miss: number; bypassed: number }> = {}
  for (const line of (await response.text()).split('\n')) {
    const match = /^credential_cache_lookups_total\{lookup="([^"]+)",result="([^"]+)"\} (\d+)/.exec(line)
    if (match === null) continue
    const [, lookup, result, value] = match as unknown as [string, string, 'hit' | 'miss' | 'bypassed', string]
    counts[lookup] ??= { hit: 0, miss: 0, bypassed: 0 }
    counts[lookup]![result] = Number(value)
  }
  return Object.keys(counts).length === 0 ? null : counts
}

/** The lines the bench prints for these figures. */
export function revocationLines(results: readonly RevocationResult[], counts: Awaited<ReturnType<typeof keptAnswerCounts>>): string[] {
  const met = (ok: boolean) => (ok ? 'met' : 'MISSED')
  const lines = results.map((r) =>
    `${r.change} on A: seen on B after ${r.other_instance_ms.p50}/${r.other_instance_ms.p99} ms p50/p99 (max ${r.other_instance_ms.max}; ≤ ${r.target_p99_ms} ms ${met(r.other_instance_ms.p99 <= r.target_p99_ms && r.missed === 0)}; ${r.other_instance_ms.samples} samples, ${r.missed} not seen within ${GIVE_UP_MS / 1000} s); A's next request reflected it ${r.same_instance_at_once} of ${r.other_instance_ms.samples + r.missed} times`)
  if (counts === null) lines.push('credential lookups answered from memory: not counted (SQLite answers repeats by its change stamp)')
  else {
    for (const [lookup, c] of Object.entries(counts)) {
      const total = c.hit + c.miss + c.bypassed
      if (total > 0) lines.push(`credential lookups ${lookup}: ${((100 * c.hit) / total).toFixed(2)} % answered from memory (${c.hit} of ${total}; ${c.miss} read, ${c.bypassed} bypassed)`)
    }
  }
  return lines
}
