import type { FastifyInstance, HTTPMethods, LightMyRequestResponse } from 'fastify'
import type { DocumentedOperation, OpenApiDocument, ResponseValidator } from './openapi-document.js'
import { casesFor, type CaseOptions, type SweepCase } from './sweep-cases.js'

/**
 * A bad-input sweep generated from the served OpenAPI document: every operation, with every
 * credential its `security` admits, gets the cases of `sweep-cases.ts` (malformed bodies, wrong
 * types, odd text and numbers, wrong content types, bad path and query parameters). Each answer
 * must keep the HTTP conventions: no 5xx, an `X-Request-Id`, `success` in every JSON answer, and
 * the error envelope on every 4xx. Cases no schema admits (a null item in an array of objects, an
 * integer parameter written `0x10`) must moreover be refused with a 4xx.
 */

export type { SweepCase }

/**
 * Who a request acts as: nobody, a global user's or the global admin's session, the admin's OAuth
 * access token, a satellite's API key, or a registration token (single use: see `SINGLE_USE`).
 */
export type Credential = 'anonymous' | 'user' | 'admin' | 'bearer' | 'satellite' | 'registration'

/**
 * Credentials that a successful request spends: a registration token pairs one satellite, once.
 * The runner asks for them afresh after each 2xx, so the cases after a success still reach the
 * validation behind the credential check instead of a 401 for a spent token.
 */
export const SINGLE_USE: ReadonlySet<Credential> = new Set<Credential>(['registration'])

export interface SweepFailure {
  operation: string
  credential: Credential
  case: string
  request: string
  status: number
  problems: string[]
  body: string
}

export interface SweepResult {
  requests: number
  operations: number
  failures: SweepFailure[]
  /** How many answers of each status. */
  statuses: Record<number, number>
  /** The same, by operation (`METHOD /path`): shows which operations the sweep's ids and bodies got through. */
  byOperation: Record<string, Record<number, number>>
}

export interface SweepOptions extends CaseOptions {
  /** The headers that present `credential`, checked to still work before each operation. */
  headersFor: (credential: Credential) => Promise<Record<string, string>>
  /** Which cases to send (default: all). */
  select?: (operation: DocumentedOperation, testCase: SweepCase, credential: Credential) => boolean
  /** When given, a 2xx JSON answer must also match the schema the document declares for it. */
  validate?: ResponseValidator
  /** Sees every answer (the log test searches them for secrets). */
  onAnswer?: (response: LightMyRequestResponse, operation: DocumentedOperation, credential: Credential) => void
}

/** Every credential the operation's `security` admits, and no credential at all. */
export function credentialsFor({ operation }: DocumentedOperation): Credential[] {
  const schemes = new Set((operation.security ?? []).flatMap((requirement) => Object.keys(requirement)))
  return [
    'anonymous',
    ...(schemes.has('cookieAuth') ? (['user', 'admin'] as const) : []),
    ...(schemes.has('bearerAuth') ? (['bearer'] as const) : []),
    ...(schemes.has('satelliteKey') ? (['satellite'] as const) : []),
    ...(schemes.has('registrationToken') ? (['registration'] as const) : []),
  ]
}

/**
 * The operations in the order the sweep calls them: DELETE last, the longest paths first among
 * them (a member is removed before its team is deleted), so that the ids other operations use
 * still exist while they are swept.
 */
export function sweepOrder(operations: DocumentedOperation[]): DocumentedOperation[] {
  const others = operations.filter((each) => each.method !== 'DELETE')
  const deletes = operations.filter((each) => each.method === 'DELETE').sort((a, b) => b.path.length - a.path.length)
  return [...others, ...deletes]
}

export const isJson = (response: LightMyRequestResponse): boolean => /^application\/(.+\+)?json/.test(String(response.headers['content-type'] ?? ''))

const ENVELOPE_KEYS = new Set(['success', 'error', 'code', 'details'])

/** What is wrong with an answer, by the conventions every answer keeps (empty: nothing). */
export function problemsOf(documented: DocumentedOperation, response: LightMyRequestResponse): string[] {
  const problems: string[] = []
  const status = response.statusCode
  const contentType = String(response.headers['content-type'] ?? '')
  const oauth = documented.path.startsWith('/api/oauth2/')
  // The MCP Registry's formats: the sub-registry API and the server.json export answer bare documents on success.
  // So does the client ID metadata document that authorization servers fetch.
  const registryFormat = documented.path.startsWith('/api/registry/') || documented.path.endsWith('/server.json') || documented.path === '/api/oauth/upstream/client.json'
  if (status >= 500) problems.push('a 5xx answer')
  if (typeof response.headers['x-request-id'] !== 'string' || response.headers['x-request-id'] === '') problems.push('no X-Request-Id')
  let body: unknown
  if (isJson(response)) {
    try {
      body = JSON.parse(response.body)
    } catch {
      problems.push('a JSON content type with a body that is not JSON')
    }
    const bare = registryFormat && status < 400
    if (body !== undefined && !bare && typeof (body as { success?: unknown })?.success !== 'boolean') problems.push('a JSON answer without a boolean `success`')
  }
  if (status >= 400 && status < 500) {
    if (body !== undefined) {
      const envelope = body as Record<string, unknown>
      const extra = Object.keys(envelope).filter((key) => !ENVELOPE_KEYS.has(key) && !(oauth && key === 'error_description') && !(registryFormat && key === 'status'))
      if (envelope.success !== false || typeof envelope.error !== 'string' || typeof envelope.code !== 'string' || envelope.code === '' || extra.length > 0) {
        problems.push('a 4xx that is not the error envelope {success:false, error, code}')
      }
    } else if (!(oauth && contentType.startsWith('text/html'))) {
      problems.push(`a 4xx answered as ${contentType || 'no content type'}, not the JSON envelope`)
    }
  }
  return problems
}

const show = (text: string, max = 300) => (text.length > max ? `${text.slice(0, max)}… (${text.length} chars)` : text)

/** Sends every case of every operation with every admitted credential; collects what breaks the conventions. */
export async function runSweep(app: FastifyInstance, document: OpenApiDocument, operations: DocumentedOperation[], options: SweepOptions): Promise<SweepResult> {
  const result: SweepResult = { requests: 0, operations: operations.length, failures: [], statuses: {}, byOperation: {} }
  for (const documented of sweepOrder(operations)) {
    const cases = casesFor(document, documented, options)
    const statuses: Record<number, number> = (result.byOperation[`${documented.method} ${documented.path}`] = {})
    for (const credential of credentialsFor(documented)) {
      let presented = await options.headersFor(credential)
      for (const testCase of cases) {
        if (options.select !== undefined && !options.select(documented, testCase, credential)) continue
        const response = await app.inject({
          method: documented.method as HTTPMethods,
          url: testCase.url,
          headers: { ...presented, ...testCase.headers },
          ...(testCase.payload === undefined ? {} : { payload: testCase.payload }),
        })
        result.requests++
        result.statuses[response.statusCode] = (result.statuses[response.statusCode] ?? 0) + 1
        statuses[response.statusCode] = (statuses[response.statusCode] ?? 0) + 1
        options.onAnswer?.(response, documented, credential)
        if (SINGLE_USE.has(credential) && response.statusCode >= 200 && response.statusCode < 300) presented = await options.headersFor(credential)
        const problems = problemsOf(documented, response)
        if (testCase.refuse === true && response.statusCode < 400) problems.push(`a ${response.statusCode} for input it must refuse`)
        if (options.validate !== undefined && response.statusCode < 300 && isJson(response) && problems.length === 0) {
          const errors = options.validate(documented, response.statusCode, JSON.parse(response.body))
          if (errors === null) problems.push(`a ${response.statusCode} the document does not declare`)
          else if (errors.length > 0) problems.push(`does not match the declared schema: ${errors.join('; ')}`)
        }
        if (problems.length > 0) {
          result.failures.push({
            operation: `${documented.method} ${documented.path}`,
            credential,
            case: testCase.name,
            request: `${documented.method} ${show(testCase.url, 160)} ${testCase.headers['content-type'] ?? ''} ${show(testCase.payload ?? '', 160)}`.trim(),
            status: response.statusCode,
            problems,
            body: show(response.body),
          })
        }
      }
    }
  }
  return result
}

/** One readable line per failure, for the assertion message. */
export function describeFailures(failures: SweepFailure[], max = 60): string {
  // Server errors first: they matter most, and a list cut at `max` must still show them.
  const ordered = [...failures].sort((a, b) => Number(b.status >= 500) - Number(a.status >= 500))
  const lines = ordered.slice(0, max).map((failure) =>
    `${failure.operation} [${failure.credential}] ${failure.case}: ${failure.status} (${failure.problems.join('; ')})\n    → ${failure.request}\n    ← ${failure.body}`)
  if (failures.length > max) lines.push(`… and ${failures.length - max} more`)
  return `${failures.length} answers broke the conventions:\n${lines.join('\n')}`
}
