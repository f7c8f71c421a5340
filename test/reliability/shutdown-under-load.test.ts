import http from 'node:http'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DEFAULT_PASSWORD } from '../helpers/accounts.js'
import { createTestDatabase, DIALECTS, type TestDatabase } from '../helpers/database.js'
import { send, sessionCookieOf, sleep, tally, type Outcome, type RequestOptions } from '../helpers/http-load.js'
import { serverBuilt, startServerProcess, type ServerProcess } from '../helpers/server-process.js'

/**
 * SIGTERM under a steady write load, against the built server as a real process: no
 * acknowledged write is lost, no request sees its connection reset, the process exits 0 within
 * its 10 s grace.
 *
 * The load client and the keep-alive race. Each worker has its own keep-alive agent with one
 * socket and sends its next request as soon as the previous answer arrived, like a busy API
 * client. HTTP/1.1 lets either side close an idle persistent connection at any time, and a
 * request that crosses the server's close on the wire is lost with no way for the client to know
 * whether it ran (RFC 9112 §9.3.1 asks clients to retry only idempotent requests then; these are
 * all POST/PUT). The client does not retry and does not hide such failures: every reset is
 * counted and fails the test. What makes the race avoidable is the server's side of it: while
 * closing, it answers every request, the in-flight ones included, with `Connection: close`, so
 * each client learns from an answer, not from a dropped socket, that the connection ends; and it
 * closes only sockets that stayed idle for a while, which a client in the middle of a request
 * sequence never does. Refused connections (the listener is closed) and 503 answers (a request
 * that arrived on an open connection after the close began; it did not run) are acceptable,
 * and counted apart.
 */

const LOAD_BEFORE_SIGNAL_MS = 1200
/** The load keeps going this long after the process exited (every request is then refused). */
const LOAD_AFTER_EXIT_MS = 300
const GRACE_MS = 10_000

interface Worker {
  label: string
  /** The next request of this worker, `n` counting from 0. */
  next(n: number): RequestOptions
}

describe.skipIf(!serverBuilt).each(DIALECTS)('SIGTERM under a write load on %s', (dialect) => {
  let dataDir: string
  let database: TestDatabase
  let env: Record<string, string>
  const processes: ServerProcess[] = []

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'svc-shutdown-load-'))
    // SQLite: a file in the process's DATA_DIR, found again by the restarted process.
    database = dialect === 'sqlite'
      ? { url: `sqlite:${join(dataDir, 'service.db')}`, drop: async () => {} }
      : await createTestDatabase('postgresql')
    env = { DATA_DIR: dataDir, DATABASE_URL: database.url, RATE_LIMIT_ENABLED: 'false' }
  })
  afterAll(async () => {
    await Promise.all(processes.map((each) => each.stop('SIGKILL')))
    await database.drop()
    rmSync(dataDir, { recursive: true, force: true })
  })

  it('loses no acknowledged write, resets no connection, and exits 0 within the grace', async () => {
    const first = await startServerProcess(env)
    processes.push(first)
    const setupAgent = new http.Agent({ keepAlive: false })
    const setup = (options: Omit<RequestOptions, 'label'>) => send(first.url, setupAgent, { label: 'setup', ...options })

    // The first registered user is the global admin.
    const adminRegistered = await setup({ method: 'POST', path: '/api/auth/email/register', body: { username: 'admin', email: 'admin@example.com', password: DEFAULT_PASSWORD } })
    expect(adminRegistered.status, JSON.stringify(adminRegistered.body)).toBe(201)
    const adminCookie = sessionCookieOf(adminRegistered)!
    expect(adminCookie).toBeDefined()
    // The admin creates every team of the load; lift the per-owner limit out of the way.
    const limit = await setup({ method: 'PUT', path: '/api/settings/team.creation_limit', body: { value: 10_000 }, cookie: adminCookie })
    expect(limit.status, JSON.stringify(limit.body)).toBe(200)

    const workers: Worker[] = [
      ...[0, 1, 2].map((w): Worker => ({
        label: 'register',
        next: (n) => ({ label: 'register', method: 'POST', path: '/api/auth/email/register', body: { username: `load_${w}_${n}`, email: `load_${w}_${n}@example.com`, password: DEFAULT_PASSWORD } }),
      })),
      ...[0, 1, 2].map((w): Worker => ({
        label: 'team',
        next: (n) => ({ label: 'team', method: 'POST', path: '/api/teams', body: { name: `Load ${w} ${n}` }, cookie: adminCookie }),
      })),
      // One writer, so its values are written in the order sent: the last acknowledged one must win.
      {
        label: 'setting',
        next: (n) => ({ label: 'setting', method: 'PUT', path: '/api/settings/global.page_url', body: { value: `https://v${n}.example.test` }, cookie: adminCookie }),
      },
    ]

    const outcomes: Outcome[] = []
    let stop = false
    const run = async (worker: Worker) => {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
      try {
        for (let n = 0; !stop; n++) {
          const outcome = await send(first.url, agent, worker.next(n))
          outcomes.push(outcome)
          // Nobody listens any more: keep trying, but without spinning.
          if (outcome.kind === 'refused') await sleep(20)
        }
      } finally {
        agent.destroy()
      }
    }
    const running = Promise.all(workers.map(run))

    // A client that keeps a keep-alive connection open and idle across the signal: it must not
    // hold the process past the grace.
    const idleAgent = new http.Agent({ keepAlive: true, maxSockets: 1 })
    expect((await send(first.url, idleAgent, { label: 'idle', method: 'GET', path: '/api/health' })).status).toBe(200)

    await sleep(LOAD_BEFORE_SIGNAL_MS)
    const signalAt = Date.now()
    const exitCode = await first.stop('SIGTERM')
    const exitMs = Date.now() - signalAt
    await sleep(LOAD_AFTER_EXIT_MS)
    stop = true
    await running
    idleAgent.destroy()

    const counts = tally(outcomes, (o) => (o.kind === 'answered' ? `${o.status} ${o.code ?? '-'}` : o.kind))
    const acrossSignal = outcomes.filter((o) => o.startedAt < signalAt && o.endedAt >= signalAt)
    const after503 = outcomes.filter((o) => o.status === 503)
    console.info(`[${dialect}] exit ${exitCode} after ${exitMs} ms; outcomes ${JSON.stringify(counts)}; by kind ${JSON.stringify(tally(outcomes, (o) => `${o.label} ${o.kind}${o.status === undefined ? '' : ` ${o.status}`}`))}; in flight at the signal ${acrossSignal.length}; 503 bodies ${JSON.stringify([...new Set(after503.map((o) => JSON.stringify(o.body)))])}`)

    expect(exitCode, first.output().slice(-4000)).toBe(0)
    expect(exitMs).toBeLessThan(GRACE_MS)
    // The load really ran across the close: requests were answered after the signal, and the
    // closed listener then refused connections.
    expect(acrossSignal.filter((o) => o.kind === 'ok' || o.kind === 'answered').length).toBeGreaterThan(0)
    expect(counts.refused ?? 0).toBeGreaterThan(0)
    // No reset, no timeout, no other client failure; every answer a 2xx or a 503.
    const broken = outcomes.filter((o) => o.kind === 'reset' || o.kind === 'timeout' || o.kind === 'error')
    expect(broken.map((o) => `${o.label} ${o.kind} ${o.error} at ${o.startedAt - signalAt} ms`)).toEqual([])
    const unexpected = outcomes.filter((o) => o.kind === 'answered' && o.status !== 503)
    expect(unexpected.map((o) => `${o.label} ${o.status} ${JSON.stringify(o.body)}`)).toEqual([])
    // A request that arrives while closing is refused like any other answer: the envelope, a
    // request id, and the connection ends after it.
    for (const refused of after503) {
      expect(refused.body).toMatchObject({ success: false, code: 'SHUTTING_DOWN' })
      expect(refused.headers?.['x-request-id']).toEqual(expect.any(String))
      expect(refused.headers?.connection).toBe('close')
    }

    const acked = (label: string) => outcomes.filter((o) => o.label === label && o.kind === 'ok')
    const registrations = acked('register')
    const teams = acked('team')
    const settings = acked('setting')
    expect(registrations.length).toBeGreaterThan(0)
    expect(teams.length).toBeGreaterThan(0)
    expect(settings.length).toBeGreaterThan(0)

    // Start again on the same database: every acknowledged write is there.
    const second = await startServerProcess(env)
    processes.push(second)
    const check = (options: Omit<RequestOptions, 'label'>) => send(second.url, setupAgent, { label: 'check', ...options })
    const login = await check({ method: 'POST', path: '/api/auth/email/login', body: { login: 'admin', password: DEFAULT_PASSWORD } })
    expect(login.status).toBe(200)
    const cookie = sessionCookieOf(login)!

    const usernames = new Set<string>()
    for (let offset = 0; ; offset += 100) {
      const page = await check({ method: 'GET', path: `/api/admin/users?limit=100&offset=${offset}`, cookie })
      expect(page.status).toBe(200)
      const data = (page.body as { data: { users: Array<{ username: string }>; pagination: { has_more: boolean } } }).data
      for (const user of data.users) usernames.add(user.username)
      if (!data.pagination.has_more) break
    }
    const sentUsernames = (o: Outcome) => (o.body as { data: { user: { username: string } } }).data.user.username
    expect(registrations.map(sentUsernames).filter((name) => !usernames.has(name))).toEqual([])

    const mine = await check({ method: 'GET', path: '/api/teams/me', cookie })
    expect(mine.status).toBe(200)
    const teamIds = new Set((mine.body as { data: { teams: Array<{ id: string }> } }).data.teams.map((team) => team.id))
    const createdId = (o: Outcome) => (o.body as { data: { team: { id: string } } }).data.team.id
    expect(teams.map(createdId).filter((id) => !teamIds.has(id))).toEqual([])

    // Settings: the one writer's values land in order, so the value now is the last one
    // acknowledged (a later request was refused or answered 503, so it never ran), and every
    // acknowledged update was written with its audit event (written after the value, before the
    // answer): one event per acknowledgement, plus the creation-limit change above.
    const page = await check({ method: 'GET', path: '/api/settings/global.page_url', cookie })
    const lastAcked = settings.reduce((latest, o) => (o.startedAt > latest.startedAt ? o : latest))
    const sentValue = (o: Outcome) => (o.body as { data: { setting: { value: string } } }).data.setting.value
    expect((page.body as { data: { setting: { value: string } } }).data.setting.value).toBe(sentValue(lastAcked))
    const audit = await check({ method: 'GET', path: '/api/admin/audit-log?type=settings.updated&limit=1', cookie })
    expect((audit.body as { data: { pagination: { total: number } } }).data.pagination.total).toBe(settings.length + 1)

    console.info(`[${dialect}] acknowledged: ${registrations.length} registrations, ${teams.length} teams, ${settings.length} settings updates; all found after the restart`)
    expect(await second.stop('SIGTERM')).toBe(0)
  }, 60_000)
})
