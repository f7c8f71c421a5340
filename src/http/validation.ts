import { Ajv, type ErrorObject } from 'ajv'
import addFormats from 'ajv-formats'
import type { FastifyInstance, FastifySchemaCompiler } from 'fastify'
import { lazy } from '../lib/lazy.js'
import type { FieldProblem } from './errors.js'

/**
 * Two validators. Query strings, params and headers arrive as text and are coerced to the
 * schema's types; bodies are JSON and are not (a boolean setting refuses "true"). Neither strips
 * unknown properties: schemas say `additionalProperties: false` and the request is refused.
 * Numbers must be finite: "Infinity" or 1e999 is not an integer. Integers in text must be written
 * in decimal digits: Ajv's coercion alone would read "0x10" as 16.
 */
const BASE_OPTIONS = { allErrors: true, removeAdditional: false, useDefaults: true, strict: false, strictNumbers: true, discriminator: true } as const

export function installValidators(app: FastifyInstance): void {
  const coercing = addFormats.default(new Ajv({ ...BASE_OPTIONS, coerceTypes: 'array' }))
  const strict = addFormats.default(new Ajv({ ...BASE_OPTIONS, coerceTypes: false }))
  // A route's validators are compiled on its first request: compiling the service's 66 distinct
  // request schemas took a tenth of its start-up. (Extension plugins' schemas are compiled when
  // they load, so that a schema Ajv cannot compile refuses the plugin, not its first request.)
  const compiler: FastifySchemaCompiler<object> = ({ schema, httpPart }) =>
    httpPart === 'body'
      ? guarded(lazy(() => strict.compile(typedDiscriminators(schema))), null)
      : guarded(lazy(() => coercing.compile(typedDiscriminators(schema))), lazy(() => integerProperties(schema)))
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
  for (const each of Object.values(shared)) ajv.addSchema(typedDiscriminators(each) as object)
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
  const validate = ajvFor(shared).compile(typedDiscriminators(schema) as object)
  return guarded(() => validate, null)
}

const problem = (instancePath: string, keyword: string, message: string): ErrorObject[] =>
  [{ instancePath, schemaPath: '#', keyword, params: {}, message }]

/**
 * The schema's validator with checks around it, for every route and request part:
 * - before it, text no database can store: the NUL character (PostgreSQL's text types cannot hold
 *   it, so SQLite refuses it too, for one behaviour on both) and unpaired UTF-16 surrogates
 *   (`"\ud800"` in JSON), which are not Unicode and which PostgreSQL's JSON types reject;
 * - before it, for text coerced to numbers (query strings, params, headers; `integers` gives the
 *   properties that take integers): an integer written other than in decimal digits. Ajv coerces
 *   with JavaScript's Number(), which also reads hexadecimal, binary and octal, exponents, a
 *   leading `+`, surrounding spaces and `5.0`, so `limit=0x10` would mean 16;
 * - after it, for the same parts: Ajv turns "Infinity" or "1e999" into a number and then skips
 *   the numeric keywords for non-finite values, so `maximum` would let it through. These parts
 *   are flat, so their top-level values are checked.
 */
function guarded(compiled: () => Validate, integers: (() => ReadonlySet<string>) | null): Validate {
  const check: Validate = (data) => {
    const path = unstorableTextPath(data)
    if (path !== null) {
      check.errors = problem(path, 'unstorableText', 'must not contain NUL characters or unpaired surrogates')
      return false
    }
    const coerced = integers !== null
    if (coerced && data !== null && typeof data === 'object') {
      const notDecimal = notDecimalIntegers(data as Record<string, unknown>, integers())
      if (notDecimal.length > 0) {
        check.errors = notDecimal.flatMap((key) => problem(`/${key}`, 'decimalInteger', 'must be an integer in decimal digits'))
        return false
      }
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

/** Digits, optionally after a minus sign: the one spelling of an integer that text may use. */
const DECIMAL_INTEGER = /^-?[0-9]+$/

/** The keys among `integers` whose text (or one of whose repeated texts) is not a decimal integer, as JSON pointer tokens. */
function notDecimalIntegers(data: Record<string, unknown>, integers: ReadonlySet<string>): string[] {
  const keys: string[] = []
  for (const key of integers) {
    const value = data[key]
    const texts = (Array.isArray(value) ? value : [value]).filter((item): item is string => typeof item === 'string')
    if (texts.some((text) => !DECIMAL_INTEGER.test(text))) keys.push(key.replace(/~/g, '~0').replace(/\//g, '~1'))
  }
  return keys
}

type SchemaNode = Record<string, unknown>

const isNode = (value: unknown): value is SchemaNode => value !== null && typeof value === 'object' && !Array.isArray(value)

/** The JSON types a schema admits, `anyOf`/`oneOf` branches included, `null` left out. */
function typesOf(schema: SchemaNode): string[] {
  const own = Array.isArray(schema.type) ? schema.type : typeof schema.type === 'string' ? [schema.type] : []
  const branches = [schema.anyOf, schema.oneOf].flatMap((list) => (Array.isArray(list) ? list.filter(isNode) : []))
  return [...own, ...branches.flatMap(typesOf)].filter((type) => type !== 'null')
}

const integersOnly = (schema: SchemaNode): boolean => {
  const types = typesOf(schema)
  return types.length > 0 && types.every((type) => type === 'integer')
}

/**
 * The top-level properties of a text part's schema that take only integers, or only lists of
 * integers (a repeated query parameter). A property that also takes text (`anyOf: [integer,
 * string]`) is left to its schema.
 */
function integerProperties(schema: unknown): ReadonlySet<string> {
  const properties = isNode(schema) && isNode(schema.properties) ? schema.properties : {}
  const keys = new Set<string>()
  for (const [key, property] of Object.entries(properties)) {
    if (!isNode(property)) continue
    const listOfIntegers = isNode(property.items) && integersOnly(property.items) && typesOf(property).every((type) => type === 'array')
    if (integersOnly(property) || listOfIntegers) keys.add(key)
  }
  return keys
}

/** Keywords whose value is a schema, a list of schemas, or a map from names to schemas. */
const SCHEMA_KEYWORDS = ['items', 'additionalItems', 'contains', 'not', 'if', 'then', 'else', 'propertyNames', 'additionalProperties', 'unevaluatedItems', 'unevaluatedProperties']
const SCHEMA_LIST_KEYWORDS = ['allOf', 'anyOf', 'oneOf', 'prefixItems', 'items']
const SCHEMA_MAP_KEYWORDS = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas']

/**
 * The schema with `type: 'object'` on every discriminated union that has no type of its own.
 * Ajv's `discriminator` keyword stands in for the `oneOf` beside it and only looks at objects:
 * on null, a number, a string or an array it checks nothing, so such a union let `[null]`
 * through to the handler. With the type, those are refused as "must be object" at their path.
 * Nodes are copied only where something changes: the route's schema (and so the OpenAPI
 * document made from it) stays as written.
 */
function typedDiscriminators<T>(schema: T, depth = 0): T {
  if (!isNode(schema) || depth > MAX_DEPTH) return schema
  let copy: SchemaNode | null = null
  const put = (key: string, value: unknown) => {
    copy ??= { ...schema }
    copy[key] = value
  }
  if (isNode(schema.discriminator) && schema.type === undefined) put('type', 'object')
  for (const keyword of SCHEMA_KEYWORDS) {
    const value = schema[keyword]
    const typed = typedDiscriminators(value, depth + 1)
    if (typed !== value) put(keyword, typed)
  }
  for (const keyword of SCHEMA_LIST_KEYWORDS) {
    const list = schema[keyword]
    if (!Array.isArray(list)) continue
    const typed = list.map((each: unknown) => typedDiscriminators(each, depth + 1))
    if (typed.some((each, index) => each !== list[index])) put(keyword, typed)
  }
  for (const keyword of SCHEMA_MAP_KEYWORDS) {
    const map = schema[keyword]
    if (!isNode(map)) continue
    const typed = Object.fromEntries(Object.entries(map).map(([name, each]) => [name, typedDiscriminators(each, depth + 1)]))
    if (Object.keys(map).some((name) => typed[name] !== map[name])) put(keyword, typed)
  }
  return (copy ?? schema) as T
}

const MAX_DEPTH = 64

/** Whether a database can store `text`: no NUL character, no unpaired surrogate. */
export const storableText = (text: string): boolean => !unstorable(text)

const unstorable = (text: string): boolean => text.includes('\u0000') || !(text as string & { isWellFormed(): boolean }).isWellFormed()

/** The JSON pointer of the first string (or key) holding unstorable text, or null. */
function unstorableTextPath(value: unknown): string | null {
  const reversed: string[] = []
  if (!holdsUnstorableText(value, reversed, 0)) return null
  return reversed.reverse().map((segment) => `/${segment.replace(/~/g, '~0').replace(/\//g, '~1')}`).join('')
}

/**
 * Whether `value` holds unstorable text, and if so where: the keys and indexes leading to it,
 * innermost first. The path is written only for the one value found, never for the thousands of
 * good ones a large body holds (building it for each cost more than the checks).
 */
function holdsUnstorableText(value: unknown, reversed: string[], depth: number): boolean {
  if (typeof value === 'string') return unstorable(value)
  if (value === null || typeof value !== 'object' || depth > MAX_DEPTH) return false
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      if (holdsUnstorableText(value[index], reversed, depth + 1)) {
        reversed.push(String(index))
        return true
      }
    }
    return false
  }
  for (const key in value) {
    if (unstorable(key) || holdsUnstorableText((value as Record<string, unknown>)[key], reversed, depth + 1)) {
      reversed.push(key)
      return true
    }
  }
  return false
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
