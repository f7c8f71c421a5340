import { connect, type AddressInfo, type Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import type { FastifyInstance, FastifyPluginAsync } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { policy } from '../../src/auth/policies.js'
import { register } from '../helpers/accounts.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'

/**
 * A request must arrive whole within REQUEST_TIMEOUT (its headers within HEADERS_TIMEOUT): a body
 * trickling in a byte at a time, or a connection that never finishes its headers, is cut off
 * instead of being held forever. The bound is on receiving the request, not on answering it: a
 * handler that takes longer than the bound (a long-poll) still answers.
 */

const ACCOUNT = { username: 'slow_client', email: 'slow@example.com', password: 'correct horse battery' }

/** A route that answers after `ms` (a long-poll's shape), to show the bound is not on the answer. */
const slowRoute: FastifyPluginAsync = async (app) => {
  app.get('/api/test/slow-answer', { config: { auth: policy.public() }, schema: { tags: ['Test'], summary: 'slow answer' } }, async () => {
    await sleep(1800)
    return { success: true }
  })
}

interface Outcome {
  /** What the server sent before it closed (empty when it just closed). */
  received: string
  /** Milliseconds from the first byte sent until the server closed the connection. */
  closedAfterMs: number
}

/**
 * Writes `head`, then the body in `chunks`, `gapMs` apart, and resolves when the server closes the
 * connection (or after `giveUpMs`, resolving with closedAfterMs = Infinity: the server kept it).
 */
function trickle(port: number, head: string, chunks: readonly string[], gapMs: number, giveUpMs: number): Promise<Outcome> {
  return new Promise((resolve) => {
    const socket: Socket = connect({ port, host: '127.0.0.1' })
    const started = Date.now()
    let received = ''
    let closed = false
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => { received += chunk })
    socket.on('error', () => {})
    const giveUp = setTimeout(() => {
      socket.destroy()
      resolve({ received, closedAfterMs: Infinity })
    }, giveUpMs)
    socket.on('close', () => {
      closed = true
      clearTimeout(giveUp)
      resolve({ received, closedAfterMs: Date.now() - started })
    })
    void (async () => {
      socket.write(head)
      for (const chunk of chunks) {
        await sleep(gapMs)
        if (closed) return
        socket.write(chunk)
      }
    })()
  })
}

function loginHead(body: string, extra = ''): string {
  return `POST /api/auth/email/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n${extra}\r\n`
}

describe.each(DIALECTS)('request and connection timeouts on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let port: number

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    ;({ app } = await ctx.build({ env: { RATE_LIMIT_ENABLED: 'false', REQUEST_TIMEOUT: '1', HEADERS_TIMEOUT: '1' }, extend: slowRoute }))
    expect((await register(app, ACCOUNT)).statusCode).toBe(201)
    await app.listen({ port: 0, host: '127.0.0.1' })
    port = (app.server.address() as AddressInfo).port
  })
  afterAll(() => ctx.close())

  it('answers 408 REQUEST_TIMEOUT and closes when a body trickles in a byte at a time past the bound', async () => {
    const body = JSON.stringify({ login: ACCOUNT.email, password: ACCOUNT.password })
    const outcome = await trickle(port, loginHead(body), [...body], 150, 6000)
    // 1 s bound, checked every second: cut within about 2 s, long before the trickle would end (≈ 8 s).
    expect(outcome.closedAfterMs).toBeLessThan(3000)
    expect(outcome.received).toMatch(/^HTTP\/1\.1 408 /)
    expect(outcome.received).toContain('"code":"REQUEST_TIMEOUT"')
  })

  it('cuts off a connection whose headers never end', async () => {
    const head = 'POST /api/auth/email/login HTTP/1.1\r\nHost: 127.0.0.1\r\n'
    const outcome = await trickle(port, head, Array.from({ length: 60 }, (_, index) => `X-Slow-${index}: a\r\n`), 100, 6000)
    expect(outcome.closedAfterMs).toBeLessThan(3000)
  })

  it('cuts off a connection that sends nothing', async () => {
    const outcome = await trickle(port, '', [], 0, 6000)
    expect(outcome.closedAfterMs).toBeLessThan(3000)
  })

  it('still serves a slow but valid client that finishes within the bound', async () => {
    const body = JSON.stringify({ login: ACCOUNT.email, password: ACCOUNT.password })
    const third = Math.ceil(body.length / 3)
    const outcome = await trickle(port, loginHead(body), [body.slice(0, third), body.slice(third, 2 * third), body.slice(2 * third)], 200, 6000)
    expect(outcome.received).toMatch(/^HTTP\/1\.1 200 /)
    expect(outcome.received).toContain('"success":true')
  })

  it('bounds receiving the request, not answering it: a handler slower than the bound still answers', async () => {
    const head = 'GET /api/test/slow-answer HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n'
    const outcome = await trickle(port, head, [], 0, 6000)
    expect(outcome.closedAfterMs).toBeGreaterThanOrEqual(1800)
    expect(outcome.received).toMatch(/^HTTP\/1\.1 200 /)
    expect(outcome.received).toContain('"success":true')
  })
})
