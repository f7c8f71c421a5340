import { Ajv, type ValidateFunction } from 'ajv'
import addFormats from 'ajv-formats'
import type { FastifyInstance } from 'fastify'

/**
 * The served OpenAPI 3.0 document, read as data: the operations it lists and the response
 * schemas it declares. Tests that walk the document cover routes added later without edits.
 */

export interface Schema {
  $ref?: string
  type?: string | string[]
  nullable?: boolean
  properties?: Record<string, Schema>
  required?: string[]
  additionalProperties?: boolean | Schema
  minProperties?: number
  items?: Schema
  minItems?: number
  anyOf?: Schema[]
  oneOf?: Schema[]
  allOf?: Schema[]
  enum?: unknown[]
  const?: unknown
  format?: string
  pattern?: string
  minLength?: number
  maxLength?: number
  minimum?: number
  maximum?: number
  default?: unknown
  [keyword: string]: unknown
}

export interface Parameter {
  name: string
  in: 'path' | 'query' | 'header' | 'cookie'
  required?: boolean
  schema?: Schema
}

export type Security = Array<Record<string, string[]>>

export interface Operation {
  security?: Security
  parameters?: Parameter[]
  requestBody?: { content?: Record<string, { schema?: Schema }> }
  responses?: Record<string, { content?: Record<string, { schema?: Schema }> }>
}

export interface OpenApiDocument {
  openapi: string
  paths: Record<string, Record<string, Operation>>
  components: { schemas?: Record<string, Schema> }
}

export interface DocumentedOperation {
  method: string
  /** The OpenAPI path template, e.g. `/api/teams/{id}`. */
  path: string
  operation: Operation
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete']

export async function servedDocument(app: FastifyInstance): Promise<OpenApiDocument> {
  const response = await app.inject({ method: 'GET', url: '/documentation/json' })
  if (response.statusCode !== 200) throw new Error(`GET /documentation/json answered ${response.statusCode}`)
  return response.json()
}

export function operationsOf(document: OpenApiDocument): DocumentedOperation[] {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.includes(method))
      .map(([method, operation]) => ({ method: method.toUpperCase(), path, operation })),
  )
}

export const parametersIn = (operation: Operation, place: Parameter['in']): Parameter[] =>
  (operation.parameters ?? []).filter((parameter) => parameter.in === place)

const LOCAL_REF = '#/components/schemas/'

/** A local `$ref` followed to its component schema; anything else unchanged. */
export function resolveRef(document: OpenApiDocument, schema: Schema | undefined): Schema | undefined {
  if (schema?.$ref?.startsWith(LOCAL_REF)) return document.components.schemas?.[schema.$ref.slice(LOCAL_REF.length)]
  return schema
}

/**
 * OpenAPI 3.0's `nullable: true` rewritten as JSON Schema (a `null` type, or an `anyOf` with
 * null when the schema has no `type`), and local `$ref`s pointed at the components registered
 * under `DOCUMENT_ID`, so that Ajv reads both as the document means them.
 */
function asJsonSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(asJsonSchema)
  if (schema === null || typeof schema !== 'object') return schema
  const { nullable, ...rest } = schema as Schema
  const converted: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(rest)) {
    converted[key] = key === '$ref' && typeof value === 'string' && value.startsWith(LOCAL_REF)
      ? `${DOCUMENT_ID}${value}`
      : key === 'properties' && value !== null && typeof value === 'object'
        ? Object.fromEntries(Object.entries(value).map(([name, inner]) => [name, asJsonSchema(inner)]))
        : asJsonSchema(value)
  }
  if (nullable !== true) return converted
  if (typeof converted.type === 'string') {
    if (Array.isArray(converted.enum) && !converted.enum.includes(null)) converted.enum = [...converted.enum, null]
    return { ...converted, type: [converted.type, 'null'] }
  }
  return { anyOf: [converted, { type: 'null' }] }
}

const DOCUMENT_ID = 'openapi-components'

export type ResponseValidator = (operation: DocumentedOperation, status: number, body: unknown) => string[] | null

/**
 * Validates an answer against the schema the document declares for its status (exact status,
 * else `2XX`); null when the document declares no JSON schema for it.
 */
export function responseValidator(document: OpenApiDocument): ResponseValidator {
  const ajv = addFormats.default(new Ajv({ strict: false, allErrors: true, validateFormats: true }))
  ajv.addSchema({ components: { schemas: asJsonSchema(document.components.schemas ?? {}) } }, DOCUMENT_ID)
  const compiled = new Map<Schema, ValidateFunction>()
  return (documented, status, body) => {
    const responses = documented.operation.responses ?? {}
    const declared = responses[String(status)] ?? responses[`${String(status)[0]}XX`]
    const schema = declared?.content?.['application/json']?.schema
    if (schema === undefined) return null
    let validate = compiled.get(schema)
    if (validate === undefined) {
      validate = ajv.compile(asJsonSchema(schema) as object)
      compiled.set(schema, validate)
    }
    if (validate(body)) return []
    return (validate.errors ?? []).map((error) => `${error.instancePath || '(root)'} ${error.message ?? 'is invalid'} ${JSON.stringify(error.params)}`)
  }
}
