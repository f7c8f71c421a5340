import type { FastifyReply, FastifyRequest } from 'fastify'
import { AppError } from '../../http/errors.js'
import { refusalPage, sendPage } from '../../http/pages.js'

/** The consent and sign-in pages answer HTML unless JSON is asked for (a separate frontend). */
export const wantsJson = (request: FastifyRequest): boolean => (request.headers.accept ?? '').includes('application/json')

export const isForm = (request: FastifyRequest): boolean =>
  request.headers['content-type']?.startsWith('application/x-www-form-urlencoded') === true

type ValidationError = Error & { validation?: Array<{ instancePath?: string; message?: string; params?: Record<string, unknown> }> }

/** The first failing field of a validation error, as one line for `error_description`. */
export function describeValidation(error: ValidationError): string {
  const first = error.validation?.[0]
  if (first === undefined) return error.message
  const extra = first.params?.additionalProperty
  if (typeof extra === 'string') return `Unknown parameter: ${extra}.`
  const field = first.instancePath?.replace(/^\//, '') || 'the body'
  return `${field} ${first.message ?? 'is invalid'}.`
}

/** What a refusal page on the authorization pages tells the reader to do next. */
export const START_AGAIN = 'Start the sign-in again from your client.'

/** A deliberate refusal as a page for a browser; the JSON envelope for everyone else. */
export function failPage(request: FastifyRequest, reply: FastifyReply, error: unknown): FastifyReply {
  if (!(error instanceof AppError) || wantsJson(request)) throw error
  // Retry-After of a 429, for instance.
  if (error.headers) reply.headers(error.headers)
  return sendPage(reply, error.statusCode, refusalPage(error, START_AGAIN))
}
