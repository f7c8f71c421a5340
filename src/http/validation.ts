import { Ajv, type ErrorObject } from 'ajv'
import addFormats from 'ajv-formats'
import type { FastifyInstance, FastifySchemaCompiler } from 'fastify'
import type { FieldProblem } from './errors.js'

/**
 * Two validators (SPEC §2.2). Query strings, params and headers arrive as text and are coerced
 * to the schema's types; bodies are JSON and are not (a boolean setting refuses "true").
 * Neither strips unknown properties: schemas say `additionalProperties: false` and the request
 * is refused.
 */
export function installValidators(app: FastifyInstance): void {
  const base = { allErrors: true, removeAdditional: false, useDefaults: true, strict: false } as const
  const coercing = addFormats.default(new Ajv({ ...base, coerceTypes: 'array' }))
  const strict = addFormats.default(new Ajv({ ...base, coerceTypes: false }))
  const compiler: FastifySchemaCompiler<object> = ({ schema, httpPart }) =>
    (httpPart === 'body' ? strict : coercing).compile(schema)
  app.setValidatorCompiler(compiler)
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
