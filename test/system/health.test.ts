import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DIALECTS } from '../helpers/database.js'
import { createTestContext, type TestApp, type TestContext } from '../helpers/app.js'

describe.each(DIALECTS)('health on %s', (dialect) => {
  let ctx: TestContext
  let subject: TestApp

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    subject = await ctx.build()
  })
  afterAll(() => ctx.close())

  it('GET /api/health answers liveness with version and uptime', async () => {
    const response = await subject.app.inject({ method: 'GET', url: '/api/health' })
    expect(response.statusCode).toBe(200)
    expect(response.json()).toEqual({
      success: true,
      data: { status: 'ok', version: expect.any(String), uptime_s: expect.any(Number) },
    })
  })

  it('GET /api/health/ready answers 200 with the dialect while the database answers', async () => {
    const response = await subject.app.inject({ method: 'GET', url: '/api/health/ready' })
    expect(response.statusCode).toBe(200)
    expect(response.json()).toEqual({ success: true, data: { status: 'ready', dialect } })
  })
})
