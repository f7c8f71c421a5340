import { Ajv, type ErrorObject } from 'ajv'
import addFormats from 'ajv-formats'
import type { FastifyInstance, FastifySchemaCompiler } from 'fastify'
import { lazy } from '../lib/lazy.js'
import type { FieldProblem } from './errors.js'

/**
 * Two validators. Query strings, params and headers arrive as text and are coerced to the
 * schema's types; bodies are JSON and are not (a boolean setting refuses "true"). Neither strips
 * unknown properties: schemas say `additionalProperties: false` and the request is refused.
 * Numbers must be finite: "Infinity" or 1e999 is not an integer.
 */
const BASE_OPTIONS = { allErrors: true, removeAdditional: false, useDefaults: true, strict: false, strictNumbers: true, discriminator: true } as const

export function installValidators(app: FastifyInstance): void {
  const coercing = addFormats.default(new Ajv({ ...BASE_OPTIONS, coerceTypes: 'array' }))
  const strict = addFormats.default(new Ajv({ ...BASE_OPTIONS, coerceTypes: false }))
  // A route's validators are compiled on its first request: compiling the service's 66 distinct
  // request schemas took a tenth of its start-up. (Extension plugins' schemas are compiled when
  // they load, so that a schema Ajv cannot compile refuses the plugin, not its first request.)
  const compiler: FastifySchemaCompiler<object> = ({ schema, httpPart }) =>
    httpPart === 'body' ? guarded(lazy(() => strict.compile(schema)), false) : guarded(lazy(() => coercing.compile(schema)), true)
  app.setValidatorCompiler(compiler)
}

export type Validate = ((data: unknown) => boolean) & { errors?: ErrorObject[] | null }

/** One Ajv per set of shared schemas (the same objects under the same ids), reused across calls. */
const ajvByShared = new Map<string, { ajv: Ajv; shared: Readonly<Record<string, unknown>> }>()

function ajvFor(shared: Readonly<Record<string, unknown>>): Ajv {
  const ids = Object.keys(shared).sort()
  const key = ids.join('\n')
  const cached = ajvByShared.get(key)
  if (cached !== undefined && ids.every((id) => cached.shared[id] === shared[id])) return cached.ajv
  const ajv = addFormats.default(new Ajv({ ...BASE_OPTIONS, coerceTypes: false }))
  for (const each of Object.values(shared)) ajv.addSchema(each as object)
  ajvByShared.set(key, { ajv, shared })
  return ajv
}

/**
 * A body validator outside any route, as strict as the routes' own (plugin collection stores
 * validate the documents their plugin writes; the plugin guard compiles plugin schemas early).
 * `shared` are the schemas `$ref`s may name; each distinct set gets its own Ajv, so one plugin's
 * shared schemas never meet another's, and a schema compiled before is not compiled again.
 */
export function bodyValidator(schema: unknown, shared: Readonly<Record<string, unknown>> = {}): Validate {
  const validate = ajvFor(shared).compile(schema as object)
  return guarded(() => validate, false)
}

const problem = (instancePath: string, keyword: string, message: string): ErrorObject[] =>
  [{ instancePath, schemaPath: '#', keyword, params: {}, message }]

/**
 * The schema's validator with two checks around it, for every route and request part:
 * - before it, text no database can store: the NUL character (PostgreSQL's text types cannot hold
 *   it, so SQLite refuses it too, for one behaviour on both) and unpaired UTF-16 surrogates
 *   (`"\ud800"` in JSON), which are not Unicode and which PostgreSQL's JSON types reject;
 * - after it, for text coerced to numbers (query strings, params): Ajv turns "Infinity" or
 *   "1e999" into a number and then skips the numeric keywords for non-finite values, so `maximum`
 *   would let it through. These parts are flat, so their top-level values are checked.
 */
function guarded(compiled: () => Validate, coerced: boolean): Validate {
  const check: Validate = (data) => {
    const path = unstorableTextPath(data, '', 0)
    if (path !== null) {
      check.errors = problem(path, 'unstorableText', 'must not contain NUL characters or unpaired surrogates')
      return false
    }
    const validate = compiled()
    const valid = validate(data)
    check.errors = validate.errors
    if (!valid || !coerced || data === null || typeof data !== 'object') return valid
    for (const [key, value] of Object.entries(data)) {
      if ((Array.isArray(value) ? value : [value]).some((item) => typeof item === 'number' && !Number.isFinite(item))) {
        check.errors = problem(`/${key}`, 'finite', 'must be a finite number')
        return false
      }
    }
    return true
  }
  return check
}

const MAX_DEPTH = 64

/** Whether a database can store `text`: no NUL character, no unpaired surrogate. */
export const storableText = (text: string): boolean => !unstorable(text)

const unstorable = (text: string): boolean => text.includes('\u0000') || !(text as string & { isWellFormed(): boolean }).isWellFormed()

/** The JSON pointer of the first string (or key) holding unstorable text, or null. */
function unstorableTextPath(value: unknown, path: string, depth: number): string | null {
  if (typeof value === 'string') return unstorable(value) ? path : null
  if (value === null || typeof value !== 'object' || depth > MAX_DEPTH) return null
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      const found = unstorableTextPath(value[index], `${path}/${index}`, depth + 1)
      if (found !== null) return found
    }
    return null
  }
  for (const key in value) {
    const keyPath = `${path}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`
    if (unstorable(key)) return keyPath
    const found = unstorableTextPath((value as Record<string, unknown>)[key], keyPath, depth + 1)
    if (found !== null) return found
  }
  return null
}

export function toFieldProblems(errors: ErrorObject[] | readonly Partial<ErrorObject>[], location: string): FieldProblem[] {
  return errors.map((error) => {
    const path = (error.instancePath ?? '')
      .split('/')
      .filter(Boolean)
      .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    const params = (error.params ?? {}) as Record<string, unknown>
    if (error.keyword === 'required') path.push(String(params.missingProperty))
    if (error.keyword === 'additionalProperties') {
      path.push(String(params.additionalProperty))
      return { field: fieldName(path, location), message: 'is not allowed', in: location }
    }
    return { field: fieldName(path, location), message: error.message ?? 'is invalid', in: location }
  })
}

function fieldName(path: string[], location: string): string {
  return path.length === 0 ? location : path.join('.')
}
