import type { FastifyInstance } from 'fastify'
import { raisedByCore } from './error-handler.js'
import { errors } from './errors.js'

/**
 * How deeply a JSON body may nest objects and arrays. No route's document comes close; past it,
 * building the value is pure cost (a megabyte of `[` holds the event loop for a quarter second).
 */
export const MAX_JSON_DEPTH = 64

const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPEN_BRACKET = 0x5b
const CLOSE_BRACKET = 0x5d
const OPEN_BRACE = 0x7b
const CLOSE_BRACE = 0x7d

/**
 * Whether the UTF-8 `bytes` hold more than `maxDepth` objects and arrays open at once: one pass
 * that stops at the first level too many, skipping strings (a backslash escapes the next byte), so
 * brackets inside them are not counted. Bytes, not characters: every byte of a multi-byte UTF-8
 * sequence is ≥ 0x80, so none is mistaken for a quote or bracket, and reading bytes is several
 * times faster than reading a string's characters. Malformed JSON is left to the parser, which
 * stops at the first error before building anything past it.
 */
export function nestsDeeperThan(bytes: Uint8Array, maxDepth: number): boolean {
  let depth = 0
  const length = bytes.length
  for (let index = 0; index < length; index++) {
    const char = bytes[index]
    if (char === QUOTE) {
      for (index++; index < length; index++) {
        const inner = bytes[index]
        if (inner === BACKSLASH) index++
        else if (inner === QUOTE) break
      }
    } else if (char === OPEN_BRACKET || char === OPEN_BRACE) {
      if (++depth > maxDepth) return true
    } else if (char === CLOSE_BRACKET || char === CLOSE_BRACE) {
      // A closer without its opener: not JSON, and the parser says so at this point at the latest.
      if (--depth < 0) return false
    }
  }
  return false
}

/**
 * The JSON parser of every route (core, OAuth, extension plugins: their contexts inherit it):
 * Fastify's own (secure-json-parse, refusing `__proto__` and `constructor.prototype`), behind a
 * depth check that refuses deep nesting before anything is built.
 */
export function installJsonParser(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error')
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    // Raised by the core: an extension plugin's own error handler passes it on unchanged.
    if (nestsDeeperThan(body as Buffer, MAX_JSON_DEPTH)) return done(raisedByCore(errors.jsonTooDeep(MAX_JSON_DEPTH)), undefined)
    parse(request, body.toString('utf8'), done)
  })
}
