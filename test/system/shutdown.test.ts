import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { once } from 'node:events'
import type { FastifyPluginAsync } from 'fastify'
import { Type } from 'typebox'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { policy } from '../../src/auth/policies.js'
import { Ok } from '../../src/http/envelope.js'
import { projectRoot } from '../../src/paths.js'
import { createTestContext, TEST_SECRET, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'

/** A route that takes 300 ms, and tells when a request has reached its handler (so is in flight, whatever the machine's load). */
function slowRoute(): { routes: FastifyPluginAsync; reached: Promise<void> } {
  let arrived!: () => void
  const reached = new Promise<void>((resolve) => { arrived = resolve })
  const routes: FastifyPluginAsync = async (app) => {
    app.get('/api/test/slow', {
      config: { auth: policy.public() },
      schema: { tags: ['Test'], summary: 'slow', response: { 200: Ok(Type.Object({ done: Type.Boolean() })) } },
    }, async () => {
      arrived()
      await new Promise((resolve) => setTimeout(resolve, 300))
      return { success: true as const, data: { done: true } }
    })
  }
  return { routes, reached }
}

describe.each(DIALECTS)('graceful close on %s', (dialect) => {
  let ctx: TestContext
  beforeAll(async () => {
    ctx = await createTestContext(dialect)
  })
  afterAll(() => ctx.close())

  it('lets an in-flight request finish, refuses new work, and closes the database', async () => {
    const slow = slowRoute()
    const { app } = await ctx.build({ extend: slow.routes })
    const address = await app.listen({ port: 0, host: '127.0.0.1' })
    const inFlight = fetch(`${address}/api/test/slow`)
    await slow.reached
    const { database } = app.services
    await app.close()
    const response = await inFlight
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ success: true, data: { done: true } })
    await expect(fetch(`${address}/api/health`)).rejects.toThrow()
    await expect(database.ping()).rejects.toThrow()
  })
})

/** The built server (npm test builds it first): signals, logs and the database file. */
describe('server process', () => {
  const entry = join(projectRoot, 'dist/src/server.js')
  let dataDir: string
  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'svc-server-'))
  })
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }))

  it.runIf(existsSync(entry)).each(['SIGTERM', 'SIGINT'] as const)('shuts down cleanly on %s', async (signal) => {
    const child = spawn(process.execPath, [entry], {
      env: { PATH: process.env.PATH, PORT: '0', DATA_DIR: dataDir, ENCRYPTION_SECRET: TEST_SECRET, LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    child.stdout.on('data', (chunk) => (output += chunk))
    child.stderr.on('data', (chunk) => (output += chunk))
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`server did not start:\n${output}`)), 10_000)
      child.stdout.on('data', () => {
        const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output)
        if (match) {
          clearTimeout(timer)
          resolve(match[1]!)
        }
      })
    })
    expect((await fetch(`${url}/api/health`)).status).toBe(200)
    expect((await fetch(`${url}/api/health/ready`)).status).toBe(200)
    child.kill(signal)
    const [code] = await once(child, 'exit')
    expect(code).toBe(0)
    expect(output).toContain('shutting down')
    // The database was closed: SQLite checkpoints and removes its WAL file on the last close.
    expect(existsSync(join(dataDir, 'service.db'))).toBe(true)
    expect(existsSync(join(dataDir, 'service.db-wal'))).toBe(false)
    // ENCRYPTION_SECRET was given, so none was generated.
    expect(statSync(join(dataDir, 'encryption-secret'), { throwIfNoEntry: false })).toBeUndefined()
  })
})
