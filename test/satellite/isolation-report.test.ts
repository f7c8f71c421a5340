/**
 * What the reference satellite tells the backend about its isolation: registration and every
 * heartbeat carry `isolation` (what it enforces: `process-sandbox`, or `none` when its operator
 * chose ISOLATION=none) and `runtimes`. A backend from before these fields refuses them as
 * unknown (400 VALIDATION_ERROR naming them); the satellite then sends without them, once told.
 * A small recording hop between the satellite and the real backend shows what was sent.
 */
import { createServer, request, type Server } from 'node:http'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { configFromEnv } from '../../examples/satellite/src/config.js'
import { silentLogger } from '../../examples/satellite/src/logger.js'
import { Satellite } from '../../examples/satellite/src/satellite.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { startOAuthServer, type OAuthServer } from '../helpers/oauth-e2e.js'
import { createToken } from '../helpers/satellites.js'
import { client, signUp, type Account, type Call } from '../helpers/teams.js'
import { waitFor } from './support.js'

interface Seen {
  path: string
  status: number
  body: Record<string, unknown>
}

/** Forwards everything to `target` and keeps each satellite request's path, JSON body and answer status. */
async function recordingHop(target: string, seen: Seen[]): Promise<{ server: Server; base: string }> {
  const server = createServer((incoming, outgoing) => {
    const chunks: Buffer[] = []
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk))
    incoming.on('end', () => {
      const body = Buffer.concat(chunks)
      const forwarded = request(new URL(incoming.url!, target), { method: incoming.method, headers: incoming.headers }, (answer) => {
        const entry = { path: incoming.url!, status: answer.statusCode!, body: body.length > 0 && /json/.test(String(incoming.headers['content-type'])) ? JSON.parse(body.toString('utf8')) : {} }
        if (entry.path.startsWith('/api/satellites/')) seen.push(entry)
        outgoing.writeHead(answer.statusCode!, answer.headers)
        answer.pipe(outgoing)
      })
      forwarded.on('error', () => outgoing.destroy())
      forwarded.end(body)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { server, base: `http://127.0.0.1:${(server.address() as { port: number }).port}` }
}

describe.each(DIALECTS)('reference satellite: isolation and runtimes reported to the backend on %s', (dialect) => {
  let ctx: TestContext
  let backend: OAuthServer
  let call: Call
  let admin: Account
  let hop: { server: Server; base: string }
  const seen: Seen[] = []
  const satellites: Satellite[] = []
  const names = new Map<Satellite, string>()
  const folders: string[] = []

  const startSatellite = async (name: string, env: Record<string, string>): Promise<Satellite> => {
    const token = await createToken(call, admin)
    const folder = mkdtempSync(join(tmpdir(), 'sat-report-'))
    folders.push(folder)
    const config = configFromEnv({ BACKEND_URL: hop.base, REGISTRATION_TOKEN: token.token, SATELLITE_NAME: name, PORT: '0', STATE_DIR: join(folder, 'state'), PACKAGE_DIRS: process.cwd(), ...env }, folder)
    const satellite = new Satellite(config, silentLogger)
    satellites.push(satellite)
    names.set(satellite, name)
    await satellite.start()
    return satellite
  }

  /** The satellite's requests of one kind, in order. */
  const sent = (satellite: Satellite, kind: 'register' | 'heartbeat') =>
    seen.filter((entry) => (kind === 'register' ? entry.path === '/api/satellites/register' && entry.body.name === names.get(satellite) : entry.path === `/api/satellites/${satellite.id}/heartbeat`))

  /**
   * Either the backend took the fields (its view shows them) or it refused them by name and the
   * satellite sent the registration again without them, and its heartbeats without them.
   */
  async function expectReported(satellite: Satellite, isolation: string): Promise<void> {
    const registrations = sent(satellite, 'register')
    expect(registrations[0]!.body).toMatchObject({ isolation, runtimes: expect.arrayContaining(['node']) })
    const heartbeats = await waitFor(() => sent(satellite, 'heartbeat').length > 0 && sent(satellite, 'heartbeat'), 'a heartbeat')
    const view = (await call('GET', `/api/satellites/${satellite.id}`, admin)).json().data.satellite
    if (registrations[0]!.status === 201) {
      expect(view).toMatchObject({ isolation, runtimes: expect.arrayContaining(['node']) })
      expect(heartbeats[0]!.body).toMatchObject({ isolation })
    } else {
      expect(registrations[0]!.status).toBe(400)
      expect(registrations[1]).toMatchObject({ status: 201 })
      expect(registrations[1]!.body).not.toHaveProperty('isolation')
      expect(registrations[1]!.body).not.toHaveProperty('runtimes')
      expect(heartbeats.every((heartbeat) => heartbeat.status === 200 && !('isolation' in heartbeat.body))).toBe(true)
    }
    expect(view.status).toBe('active')
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    backend = await startOAuthServer(ctx)
    call = client(backend.app)
    admin = await signUp(backend.app, `report_${dialect}_admin`) // the first user: global admin
    hop = await recordingHop(backend.base, seen)
  })

  afterAll(async () => {
    await Promise.all(satellites.map((satellite) => satellite.stop()))
    hop?.server.close()
    await backend?.app.close()
    await ctx?.close()
    for (const folder of folders) rmSync(folder, { recursive: true, force: true })
  })

  it('a sandboxed satellite reports process-sandbox and the runtimes it can start (never docker)', async () => {
    const satellite = await startSatellite(`sandboxed-${dialect}`, {})
    await expectReported(satellite, 'process-sandbox')
    expect(sent(satellite, 'register')[0]!.body.runtimes).not.toContain('docker')
  })

  it('ISOLATION=none reports none', async () => {
    const satellite = await startSatellite(`bare-${dialect}`, { ISOLATION: 'none' })
    await expectReported(satellite, 'none')
  })

  it('a satellite whose bubblewrap cannot start still pairs, and reports that it enforces nothing and can run nothing', async () => {
    const satellite = await startSatellite(`broken-${dialect}`, { BWRAP_PATH: '/nonexistent/bwrap' })
    expect(sent(satellite, 'register')[0]!.body).toMatchObject({ isolation: 'none', runtimes: [] })
  })
})
