import { randomBytes } from 'node:crypto'
import type { IncomingMessage } from 'node:http'

const VALID_ID = /^[A-Za-z0-9._:-]{1,128}$/

/**
 * Generated ids have a UUID's 8-4-4-4-12 form: 80 random bits drawn once per process, then a
 * counter. Unique within a process, and across processes by the random part; a request id is a
 * label for logs, not a secret, so it needs no fresh randomness per request.
 */
const PROCESS_PART = randomBytes(10).toString('hex').replace(/^(.{8})(.{4})(.{4})(.{4})$/, '$1-$2-$3-$4-')
const COUNTER_LIMIT = 2 ** 48
let counter = 0

export function newRequestId(): string {
  counter = (counter + 1) % COUNTER_LIMIT
  return PROCESS_PART + counter.toString(16).padStart(12, '0')
}

/** Echo a well-formed incoming X-Request-Id, else make one. */
export function requestId(request: IncomingMessage): string {
  const incoming = request.headers['x-request-id']
  return typeof incoming === 'string' && VALID_ID.test(incoming) ? incoming : newRequestId()
}
