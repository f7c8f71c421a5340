import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestApp, type TestContext } from '../helpers/app.js'
import { exampleOf } from '../helpers/bad-values.js'
import { DIALECTS } from '../helpers/database.js'
import {
  operationsOf, parametersIn, responseValidator, servedDocument, type DocumentedOperation, type OpenApiDocument,
} from '../helpers/openapi-document.js'
import { rawRequest, type RawResponse } from '../helpers/raw-http.js'
import { smtpSettings, startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js'
import { sweepAccounts, type SweepAccounts } from '../helpers/sweep-fixtures.js'
import { credentialsFor, describeFailures, isJson, problemsOf, runSweep } from '../helpers/sweep.js'

/**
 * Bad input never yields a 5xx, and every answer keeps the HTTP conventions (README, "HTTP
 * conventions"). The cases are generated from the served OpenAPI document, so a route added
 * later is swept without editing this file.
 *
 * Credentials: the sweep acts as nobody, a global user, the global admin, the admin's bearer
 * token, a paired satellite's API key and a registration token, as each operation's `security`
 * admits (a registration token is single use: a fresh one follows each successful registration,
 * so the cases after it still reach validation). Some operations could end a credential (logout,
 * a role change, deleting a user or team), so before each operation every credential is checked
 * with one cheap request and renewed by a new login or token when it stopped working; the
 * admin's user operations target a separate victim account, and DELETE operations run last so
 * that the team and member ids stay valid for everything else.
 */

/** The satellite control channel's operations, on the agent's own id (and an instance of its document). */
const CHANNEL_OPERATIONS = [
  'GET /api/satellites/{id}/desired-state', 'PUT /api/satellites/{id}/observed-state', 'PUT /api/satellites/{id}/instances/{instanceId}/tools',
  'POST /api/satellites/{id}/instances/{instanceId}/logs', 'PUT /api/satellites/{id}/public-key',
]

describe.each(DIALECTS)('bad-input sweep on %s', (dialect) => {
  let ctx: TestContext
  let subject: TestApp
  let document: OpenApiDocument
  let accounts: SweepAccounts
  let sink: SmtpSink

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    sink = await startSmtpSink()
    subject = await ctx.build({ env: { RATE_LIMIT_ENABLED: 'false' } })
    document = await servedDocument(subject.app)
    accounts = await sweepAccounts(subject.app)
    // Mail goes to a real sink, so the mail routes answer instead of 503 EMAIL_DISABLED; the sweep
    // accounts, registered before, need no verification to log in again.
    await subject.app.services.settings.update(smtpSettings(sink, { 'global.require_email_verification': false }))
  })
  afterAll(async () => {
    await ctx?.close()
    await sink?.close()
  })

  it('answers the admin\'s valid reads with what the document declares', async () => {
    const validate = responseValidator(document)
    const problems: string[] = []
    const answered: string[] = []
    for (const documented of operationsOf(document).filter((each) => each.method === 'GET')) {
      const credentials = credentialsFor(documented)
      const as = credentials.includes('admin') ? 'admin' : credentials.includes('bearer') ? 'bearer' : credentials.includes('satellite') ? 'satellite' : 'anonymous'
      const url = validUrl(documented)
      const response = await subject.app.inject({ method: 'GET', url, headers: await accounts.headersFor(as) })
      const name = `GET ${url} [${as}] → ${response.statusCode}`
      problems.push(...problemsOf(documented, response).map((problem) => `${name}: ${problem}`))
      if (response.statusCode >= 200 && response.statusCode < 300) {
        if (!isJson(response)) {
          // Right only where the document declares that media type for the answer (the Prometheus metrics, the HTML pages);
          // a declared `text/html` covers `text/html; charset=utf-8`.
          const declared = Object.keys(documented.operation.responses?.[String(response.statusCode)]?.content ?? {})
          const contentType = String(response.headers['content-type'])
          if (declared.some((type) => contentType === type || contentType.startsWith(`${type};`))) answered.push(`GET ${documented.path}`)
          else problems.push(`${name}: a 2xx that is not JSON (${String(response.headers['content-type'])})`)
          continue
        }
        const errors = validate(documented, response.statusCode, response.json())
        if (errors === null) problems.push(`${name}: the document declares no JSON schema for this status`)
        else if (errors.length > 0) problems.push(`${name}: ${errors.join('; ')}\n    ${response.body.slice(0, 400)}`)
        else answered.push(`GET ${documented.path}`)
      } else if (parametersIn(documented.operation, 'query').length === 0 && !(response.statusCode >= 300 && response.statusCode < 400)) {
        // Real ids and no query: nothing in the request can be wrong, so the read must succeed (or redirect).
        problems.push(`${name}: a valid read that did not succeed: ${response.body.slice(0, 300)}`)
      }
    }
    expect(problems, problems.join('\n')).toEqual([])
    expect(answered).toEqual(expect.arrayContaining(['GET /api/users/me', 'GET /api/teams/{id}', 'GET /api/admin/users', 'GET /api/admin/users/{id}', 'GET /api/settings/{key}', 'GET /api/metrics']))
    // The installation reads with a real installation of the sweep team.
    expect(answered).toEqual(expect.arrayContaining([
      'GET /api/teams/{teamId}/mcp/installations/{id}', 'GET /api/teams/{teamId}/mcp/installations/{id}/my-values',
      'GET /api/teams/{teamId}/mcp/installations/{id}/tools', 'GET /api/teams/{teamId}/mcp/installations/{id}/logs',
      'GET /api/users/me/mcp/installations', 'GET /api/users/me/mcp/client-config',
    ]))
    // The agent's own document, with its key.
    expect(answered).toContain('GET /api/satellites/{id}/desired-state')
  })

  it('never answers bad input with a 5xx, and every answer keeps the conventions', { timeout: 600_000 }, async () => {
    const started = performance.now()
    const operations = operationsOf(document)
    const result = await runSweep(subject.app, document, operations, {
      pathValue: accounts.pathValue,
      knownValue: accounts.knownValue,
      headersFor: accounts.headersFor,
      validate: responseValidator(document),
    })
    const seconds = ((performance.now() - started) / 1000).toFixed(1)
    console.info(
      `[${dialect}] bad-input sweep: ${result.requests} requests over ${result.operations} operations in ${seconds} s ` +
      `(+${accounts.checks} credential checks); statuses ${JSON.stringify(result.statuses)}; ${result.failures.length} failures`,
    )
    // Real ids and a real server reach every installation operation: each got through to a 2xx at least once.
    // (The connections of an installation need a remote server that asks for OAuth, which the sweep's has not: test/connections covers them.)
    const installationOperations = Object.entries(result.byOperation).filter(([operation]) => /\/mcp\/(installations|client-config)/.test(operation) && !operation.includes('/connections'))
    const installationCounts = installationOperations.map(([operation, statuses]) => `${operation} ${JSON.stringify(statuses)}`)
    console.info(`[${dialect}] installation operations:\n  ${installationCounts.join('\n  ')}`)
    expect(installationOperations.length).toBeGreaterThanOrEqual(13)
    for (const [operation, statuses] of installationOperations) {
      expect(Object.keys(statuses).some((status) => status.startsWith('2')), `${operation}: ${JSON.stringify(statuses)}`).toBe(true)
    }
    // The agent's id and the instance of its document reach every channel operation: each got through to a 2xx at least once.
    const channelOperations = Object.entries(result.byOperation).filter(([operation]) => CHANNEL_OPERATIONS.includes(operation))
    console.info(`[${dialect}] channel operations:\n  ${channelOperations.map(([operation, statuses]) => `${operation} ${JSON.stringify(statuses)}`).join('\n  ')}`)
    expect(channelOperations.map(([operation]) => operation).sort()).toEqual([...CHANNEL_OPERATIONS].sort())
    for (const [operation, statuses] of channelOperations) {
      expect(Object.keys(statuses).some((status) => status.startsWith('2')), `${operation}: ${JSON.stringify(statuses)}`).toBe(true)
    }
    expect(result.operations).toBeGreaterThanOrEqual(50)
    expect(result.requests).toBeGreaterThan(2000)
    expect(result.failures.length, describeFailures(result.failures)).toBe(0)
  })

  describe('on a listening server', () => {
    let port: number

    beforeAll(async () => {
      const listening = await ctx.build({ env: { RATE_LIMIT_ENABLED: 'false' } })
      await listening.app.listen({ port: 0, host: '127.0.0.1' })
      port = (listening.app.server.address() as AddressInfo).port
    })

    const expectEnvelope = (response: RawResponse, status?: number) => {
      const summary = `${response.status} ${JSON.stringify(response.headers)} ${response.body.slice(0, 300)}`
      if (status !== undefined) expect(response.status, summary).toBe(status)
      expect(response.status, summary).toBeGreaterThanOrEqual(400)
      expect(response.status, summary).toBeLessThan(500)
      expect(response.headers['x-request-id'], summary).toMatch(/\S/)
      expect(response.headers['content-type'], summary).toMatch(/^application\/json/)
      const body = JSON.parse(response.body)
      expect(body, summary).toMatchObject({ success: false, error: expect.any(String), code: expect.stringMatching(/^[A-Z_]+$/) })
      expect(Object.keys(body).filter((key) => !['success', 'error', 'code', 'details'].includes(key)), summary).toEqual([])
    }

    it('a malformed percent-encoding in the path answers the envelope', async () => {
      expectEnvelope(await rawRequest(port, '/api/teams/%ZZ'), 400)
    })

    it('a path parameter over 1 000 characters answers the envelope', async () => {
      expectEnvelope(await rawRequest(port, `/api/teams/${'a'.repeat(1001)}`))
    })

    it('a request line over 16 KiB answers 431 in the envelope', async () => {
      expectEnvelope(await rawRequest(port, `/api/health?pad=${'a'.repeat(17 * 1024)}`), 431)
    })
  })

  /** The operation's URL with real ids and the required query parameters (list defaults otherwise). */
  function validUrl(documented: DocumentedOperation): string {
    const path = documented.path.replace(/\{([^}]+)\}/g, (_match, name: string) => encodeURIComponent(accounts.validPathValue(documented, name) ?? 'sweep'))
    const query = parametersIn(documented.operation, 'query')
      .filter((param) => param.required)
      .map((param) => `${encodeURIComponent(param.name)}=${encodeURIComponent(String(exampleOf(param.schema ?? {}, param.name)))}`)
    return query.length === 0 ? path : `${path}?${query.join('&')}`
  }
})
