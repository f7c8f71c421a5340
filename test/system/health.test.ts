import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { API_VERSION } from '../../src/system/openapi.js'
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
      data: { status: 'ok', version: expect.any(String), api_version: expect.any(String), uptime_s: expect.any(Number) },
    })
  })

  it('GET /api/health names the package version and, apart from it, the API version of the document', async () => {
    const { data } = (await subject.app.inject({ method: 'GET', url: '/api/health' })).json()
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
    const document = (await subject.app.inject({ method: 'GET', url: '/documentation/json' })).json()
    expect(data.version).toBe(version)
    expect(data.api_version).toBe(document.info.version)
    expect(data.api_version).toBe(API_VERSION)
    expect(data.api_version).toBe('0.20.5')
  })

  it('GET /api/health/ready answers 200 with the dialect while the database answers', async () => {
    const response = await subject.app.inject({ method: 'GET', url: '/api/health/ready' })
    expect(response.statusCode).toBe(200)
    expect(response.json()).toEqual({ success: true, data: { status: 'ready', dialect } })
  })
})
