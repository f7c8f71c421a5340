import {
  acceptsNull, acceptsNumber, acceptsText, BAD_FORM_VALUES, BAD_NUMBERS, BAD_PATH_VALUES, BAD_QUERY_VALUES, BAD_TEXT, decoded, exampleObject,
  exampleOf, integersOnly, isDecimalInteger, LONG_TEXT, RawJson, toJson, typesOf, wrongTypes,
} from './bad-values.js'
import { parametersIn, resolveRef, type DocumentedOperation, type OpenApiDocument, type Parameter, type Schema } from './openapi-document.js'

/**
 * The bad-input cases of one documented operation: bad query and path parameters, bodies of the
 * wrong shape, content type or size, then each field of the body missing, of a wrong type, or
 * holding odd text or numbers. Each case starts from a valid-looking request made from the
 * schema, so that only the mutated part is wrong.
 */

export interface SweepCase {
  name: string
  url: string
  headers: Record<string, string>
  payload?: string
  /** Input no schema of the operation admits: it must be refused with a 4xx, not merely not crash. */
  refuse?: boolean
}

export interface CaseOptions {
  /** A real value for a path parameter (so that body mutations reach the handler); `sweep` otherwise. */
  pathValue?: (operation: DocumentedOperation, name: string) => string | undefined
  /**
   * A value that the service knows (a client id, its redirect URI) for a query parameter or a
   * top-level body field; such parameters join the valid-looking base, so that mutating another
   * one reaches deeper than the first lookup that fails.
   */
  knownValue?: (operation: DocumentedOperation, name: string) => unknown
}

const JSON_TYPE = 'application/json'
const FORM_TYPE = 'application/x-www-form-urlencoded'
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])
const TWO_MIB = 2 * 1024 * 1024

interface Field {
  path: Array<string | number>
  schema: Schema
  required: boolean
}

/** The fields of a body schema, nested objects and the first item of arrays included. */
function fieldsOf(schema: Schema, resolve: (schema: Schema) => Schema, path: Array<string | number> = [], depth = 0): Field[] {
  if (depth > 3) return []
  return Object.entries(schema.properties ?? {}).flatMap(([key, raw]) => {
    const property = resolve(raw)
    const here: Field = { path: [...path, key], schema: property, required: schema.required?.includes(key) === true }
    const items = property.items === undefined ? undefined : resolve(property.items)
    const inner = property.properties !== undefined
      ? fieldsOf(property, resolve, here.path, depth + 1)
      : items?.properties !== undefined ? fieldsOf(items, resolve, [...here.path, 0], depth + 1) : []
    return [here, ...inner]
  })
}

const clone = <T>(value: T): T => structuredClone(value)

/** `body` with the value at `path` replaced (containers made as needed), or removed when `remove`. */
function withValue(body: Record<string, unknown>, path: Array<string | number>, value: unknown, remove = false): Record<string, unknown> {
  const copy = clone(body)
  let container: Record<string | number, unknown> = copy
  for (let index = 0; index < path.length - 1; index++) {
    const key = path[index]!
    if (container[key] === null || typeof container[key] !== 'object') container[key] = typeof path[index + 1] === 'number' ? [] : {}
    container = container[key] as Record<string | number, unknown>
  }
  const last = path[path.length - 1]!
  if (remove) delete container[last]
  else container[last] = value
  return copy
}

const fieldName = (path: Array<string | number>) => path.map((part) => (typeof part === 'number' ? `[${part}]` : part)).join('.').replace(/\.\[/g, '[')

type Known = (name: string) => unknown

/** The required fields' examples, and every field the service has a known value for. */
function baseBody(body: Schema, resolve: (schema: Schema) => Schema, known: Known): Record<string, unknown> {
  const base = exampleObject(body, resolve)
  for (const key of Object.keys(body.properties ?? {})) {
    const value = known(key)
    if (value !== undefined) base[key] = value
  }
  return base
}

/** A label, a body, and whether the body must be refused. */
type BodyCase = [string, unknown, boolean?]

/** Whether an array's items refuse null: they have a type, and null is not among them. */
const itemsRefuseNull = (items: Schema): boolean => typesOf(items).length > 0 && !acceptsNull(items)

function jsonBodyCases(body: Schema, resolve: (schema: Schema) => Schema, known: Known): Array<[string, string, boolean]> {
  const base = baseBody(body, resolve, known)
  const cases: BodyCase[] = [
    ['valid-looking body', base],
    ['every field', { ...exampleObject(body, resolve, true), ...base }],
    ['an unknown field', { ...base, sweep_unknown: 1 }],
  ]
  for (const field of fieldsOf(body, resolve)) {
    const name = fieldName(field.path)
    const valid = (field.path.length === 1 ? known(name) : undefined) ?? exampleOf(field.schema, String(field.path[field.path.length - 1]), resolve)
    const set = (value: unknown) => withValue(base, field.path, value)
    if (field.required) cases.push([`${name} missing`, withValue(base, field.path, undefined, true)])
    for (const [label, value] of wrongTypes(field.schema)) cases.push([`${name} is ${label}`, set(value)])
    if (acceptsText(field.schema)) {
      const prefix = typeof valid === 'string' ? valid : 'sweep'
      cases.push([`${name} of 100 000 characters`, set(prefix + LONG_TEXT)])
      for (const [label, text] of Object.entries(BAD_TEXT)) {
        cases.push([`${name} with ${label}`, set(text instanceof RawJson ? new RawJson(JSON.stringify(prefix).slice(0, -1) + text.text.slice(1)) : prefix + text)])
      }
    }
    if (acceptsNumber(field.schema)) for (const [label, value] of Object.entries(BAD_NUMBERS)) cases.push([`${name} = ${label}`, set(value)])
    if (field.schema.type === 'array') {
      cases.push([`${name} empty`, set([])])
      // A null where an item (an object, most often) belongs: a handler reading its fields would crash.
      cases.push([`${name} holding null`, set([null]), itemsRefuseNull(resolve(field.schema.items ?? {}))])
      cases.push([`${name} of 1 000 items`, set(Array.from({ length: 1000 }, () => (Array.isArray(valid) ? valid[0] : 'sweep')))])
    }
  }
  return cases.map(([label, value, refuse = false]) => [label, toJson(value), refuse])
}

const formPair = (key: string, value: string) => `${encodeURIComponent(key)}=${value}`
const formOf = (object: Record<string, unknown>) =>
  Object.entries(object).map(([key, value]) => formPair(key, encodeURIComponent(String(value)))).join('&')

function formBodyCases(body: Schema, resolve: (schema: Schema) => Schema, known: Known): Array<[string, string]> {
  const base = baseBody(body, resolve, known)
  const cases: Array<[string, string]> = [
    ['valid-looking form', formOf(base)],
    ['form with an unknown field', `${formOf(base)}&sweep_unknown=1`],
    ['form with malformed percent-encoding', '%ZZ=%ZZ&a=%'],
  ]
  for (const [key, property] of Object.entries(body.properties ?? {})) {
    const others = formOf(Object.fromEntries(Object.entries(base).filter(([name]) => name !== key)))
    const valid = encodeURIComponent(String(known(key) ?? exampleOf(property, key, resolve)))
    const join = (pair: string) => (others === '' ? pair : `${others}&${pair}`)
    if (body.required?.includes(key)) cases.push([`form without ${key}`, others])
    cases.push([`form with ${key} repeated`, join(`${formPair(key, valid)}&${formPair(key, valid)}`)])
    for (const [label, value] of Object.entries(BAD_FORM_VALUES)) cases.push([`form ${key} ${label}`, join(formPair(key, valid + value))])
  }
  return cases
}

/** Every bad-input case of one operation (the credential is added by the runner). */
export function casesFor(document: OpenApiDocument, documented: DocumentedOperation, options: CaseOptions = {}): SweepCase[] {
  const { pathValue = () => undefined, knownValue = () => undefined } = options
  const { method, path, operation } = documented
  const resolve = (schema: Schema) => resolveRef(document, schema) ?? schema
  const pathParams = parametersIn(operation, 'path')
  const queryParams = parametersIn(operation, 'query')
  const pathValues = Object.fromEntries(pathParams.map((param) => [param.name, encodeURIComponent(pathValue(documented, param.name) ?? 'sweep')]))
  const queryExample = (param: Parameter) => knownValue(documented, param.name) ?? exampleOf(param.schema ?? {}, param.name, resolve)
  const baseQuery: Array<[string, string]> = queryParams
    .filter((param) => param.required || knownValue(documented, param.name) !== undefined)
    .map((param) => [param.name, encodeURIComponent(String(queryExample(param)))])

  const urlOf = (values: Record<string, string>, query: Array<[string, string]>) => {
    const filled = path.replace(/\{([^}]+)\}/g, (_match, name: string) => values[name] ?? 'sweep')
    return query.length === 0 ? filled : `${filled}?${query.map(([key, value]) => `${encodeURIComponent(key)}=${value}`).join('&')}`
  }
  const baseUrl = urlOf(pathValues, baseQuery)
  const cases: SweepCase[] = []
  const add = (name: string, url: string, contentType?: string, payload?: string, refuse = false) =>
    cases.push({
      name, url, headers: contentType === undefined ? {} : { 'content-type': contentType }, ...(payload === undefined ? {} : { payload }), ...(refuse ? { refuse } : {}),
    })

  // Query strings: unknown and repeated parameters, then each known one with bad values.
  const withQuery = (extra: Array<[string, string]>) => urlOf(pathValues, [...baseQuery, ...extra])
  add('an unknown query parameter', withQuery([['sweep_unknown', '1']]))
  add('repeated query parameter ?limit=1&limit=2', withQuery([['limit', '1'], ['limit', '2']]))
  for (const param of queryParams) {
    const others = baseQuery.filter(([name]) => name !== param.name)
    const valid = encodeURIComponent(String(queryExample(param)))
    add(`query ${param.name} repeated`, urlOf(pathValues, [...others, [param.name, valid], [param.name, valid]]))
    // An integer parameter takes decimal digits only: `0x10`, `1e1` or ` 5` must be refused, not read as numbers.
    const integer = integersOnly(resolve(param.schema ?? {}))
    for (const [label, value] of Object.entries(BAD_QUERY_VALUES)) {
      const text = decoded(value)
      add(`query ${param.name}=${label}`, urlOf(pathValues, [...others, [param.name, value]]), undefined, undefined, integer && (text === null || !isDecimalInteger(text)))
    }
  }

  // Path parameters.
  for (const param of pathParams) {
    for (const [label, value] of Object.entries(BAD_PATH_VALUES)) add(`path ${param.name} ${label}`, urlOf({ ...pathValues, [param.name]: value }, baseQuery))
  }

  if (!BODY_METHODS.has(method)) {
    add('a JSON body on a method without one', baseUrl, JSON_TYPE, '{"sweep":')
    return cases
  }

  // Bodies: their shape, their content type, their size; then field by field.
  const content = operation.requestBody?.content ?? {}
  const jsonSchema = content[JSON_TYPE]?.schema === undefined ? undefined : resolve(content[JSON_TYPE]!.schema!)
  const formSchema = content[FORM_TYPE]?.schema === undefined ? undefined : resolve(content[FORM_TYPE]!.schema!)
  const known: Known = (name) => knownValue(documented, name)
  const baseJson = jsonSchema === undefined ? '{}' : toJson(baseBody(jsonSchema, resolve, known))
  for (const [label, payload] of [
    ['malformed JSON', '{"sweep":'], ['a JSON array', '[]'], ['a JSON string', '"sweep"'], ['a JSON number', '42'], ['JSON null', 'null'],
    ['an empty JSON body', ''], ['a __proto__ key', '{"__proto__":{"polluted":true}}'], ['a constructor.prototype key', '{"constructor":{"prototype":{"polluted":true}}}'],
  ] as const) add(label, baseUrl, JSON_TYPE, payload)
  add('JSON sent as text/plain', baseUrl, 'text/plain', baseJson)
  add('JSON sent as a form', baseUrl, FORM_TYPE, baseJson)
  add('JSON sent as multipart', baseUrl, 'multipart/form-data; boundary=sweep', baseJson)
  add('JSON without a content type', baseUrl, undefined, baseJson)
  add('a 2 MiB JSON body', baseUrl, JSON_TYPE, JSON.stringify({ sweep: 'a'.repeat(TWO_MIB) }))
  if (jsonSchema !== undefined) for (const [label, payload, refuse] of jsonBodyCases(jsonSchema, resolve, known)) add(label, baseUrl, JSON_TYPE, payload, refuse)
  if (formSchema !== undefined) for (const [label, payload] of formBodyCases(formSchema, resolve, known)) add(label, baseUrl, FORM_TYPE, payload)
  return cases
}
