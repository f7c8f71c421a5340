import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { expect } from 'vitest'

/**
 * Concurrency helpers for the race suites (test/reliability/races-*.test.ts): requests are fired
 * together through `app.inject`, then the database is read back through the app's own connection.
 */

/** Fires `n` calls at once (none awaits another) and answers them in call order. */
export async function fire<T>(n: number, call: (index: number) => Promise<T>): Promise<T[]> {
  return Promise.all(Array.from({ length: n }, (_, index) => call(index)))
}

/**
 * Opens `n` pooled connections before a race, so that on PostgreSQL the racing transactions start
 * together instead of queueing behind connection set-up (on SQLite it is one cheap query each).
 */
export async function warmUp(app: FastifyInstance, n: number): Promise<void> {
  await fire(n, () => app.services.database.ping())
}

/** The status codes, sorted: `[200, 409, 409]`. */
export function statuses(responses: readonly LightMyRequestResponse[]): number[] {
  return responses.map((response) => response.statusCode).sort((a, b) => a - b)
}

/** Fails, with every body, unless the answers are exactly `expected` (as a multiset of status → code). */
export function expectOutcome(responses: readonly LightMyRequestResponse[], expected: Record<string, number>): void {
  const seen: Record<string, number> = {}
  for (const response of responses) {
    const key = response.statusCode < 300 ? String(response.statusCode) : `${response.statusCode} ${response.json().code}`
    seen[key] = (seen[key] ?? 0) + 1
  }
  expect(seen, bodies(responses)).toEqual(expected)
}

/** Never a 5xx: a lost race is a refusal with a stable code, never an internal error. */
export function expectNoServerError(responses: readonly LightMyRequestResponse[]): void {
  const failures = responses.filter((response) => response.statusCode >= 500)
  expect(failures.map((response) => `${response.statusCode} ${response.body}`), bodies(responses)).toEqual([])
}

/** The winners (2xx answers) of a race. */
export function winners(responses: readonly LightMyRequestResponse[]): LightMyRequestResponse[] {
  return responses.filter((response) => response.statusCode >= 200 && response.statusCode < 300)
}

function bodies(responses: readonly LightMyRequestResponse[]): string {
  return responses.map((response) => `${response.statusCode} ${response.body.slice(0, 300)}`).join('\n')
}
