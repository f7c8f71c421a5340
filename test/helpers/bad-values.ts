import type { Schema } from './openapi-document.js'

/**
 * Example values made from a schema, and the bad values a sweep puts in their place.
 */

/** JSON text sent as is: numbers JSON.stringify cannot write (1e309) and escapes it would not keep. */
export class RawJson {
  constructor(readonly text: string) {}
}

/** JSON.stringify, except that RawJson values are written verbatim. */
export function toJson(value: unknown): string {
  if (value instanceof RawJson) return value.text
  if (Array.isArray(value)) return `[${value.map(toJson).join(',')}]`
  if (value !== null && typeof value === 'object') {
    return `{${Object.entries(value).map(([key, inner]) => `${JSON.stringify(key)}:${toJson(inner)}`).join(',')}}`
  }
  return JSON.stringify(value)
}

export const LONG_TEXT = 'a'.repeat(100_000)

/** Text appended to a field's valid-looking value, so that only the odd characters differ. */
export const BAD_TEXT: Record<string, string | RawJson> = {
  'emoji': '😀👍🏽🇺🇳',
  'right-to-left': '\u202Eevil\u202C שלום مرحبا',
  'combining marks': 'e\u0301\u0301\u0301 Z\u0334\u0321\u0322\u034E',
  'NUL': 'a\u0000b',
  'control characters': '\u0001\u0007\u001b[31m\r\n\t\u007f',
  // JSON.stringify would escape it the same way; written by hand so that the intent is plain.
  'lone surrogate': new RawJson('"x\\ud800"'),
  'empty': '',
}

export const BAD_NUMBERS: Record<string, unknown> = {
  '1e309': new RawJson('1e309'),
  '-1e309': new RawJson('-1e309'),
  '-1': -1,
  '1e23': 1e23,
  'fraction': 0.5,
}

/** Query-string values, already percent-encoded where needed. */
export const BAD_QUERY_VALUES: Record<string, string> = {
  'Infinity': 'Infinity',
  '1e999': '1e999',
  '99999999999999999999999': '99999999999999999999999',
  '-1': '-1',
  'NaN': 'NaN',
  'empty': '',
  'long': LONG_TEXT,
  '%00': 'a%00b',
  'control': '%01%07%1B',
  'unicode': '%F0%9F%98%80%E2%80%AE%D7%A9%D7%9C%D7%95%D7%9D',
  'invalid UTF-8 (lone surrogate)': '%ED%A0%80',
  'malformed %ZZ': '%ZZ',
  // Notations JavaScript's Number() reads as integers, which an integer parameter must refuse.
  '0x10': '0x10',
  '0b1': '0b1',
  '0o7': '0o7',
  '1e1': '1e1',
  '5.0': '5.0',
  '+5': '%2B5',
  'leading space': '%205',
  'trailing space': '5%20',
}

/** Text that spells an integer in decimal digits, optionally after a minus sign (already decoded). */
export const isDecimalInteger = (text: string): boolean => /^-?[0-9]+$/.test(text)

/** A query or path value as the service reads it; null when its percent-encoding is malformed. */
export function decoded(encoded: string): string | null {
  try {
    return decodeURIComponent(encoded)
  } catch {
    return null
  }
}

/** Path-parameter values, already percent-encoded where needed. */
export const BAD_PATH_VALUES: Record<string, string> = {
  '1 001 chars': 'a'.repeat(1001),
  '5 000 chars': 'a'.repeat(5000),
  'traversal': '..%2F..%2Fetc%2Fpasswd',
  'unicode': '%F0%9F%98%80%E2%80%AE%D7%A9%D7%9C%D7%95%D7%9D',
  'combining': 'e%CC%81%CC%81',
  '%00': '%00',
  'x%00y': 'x%00y',
  'control': '%01%1B',
  'malformed %ZZ': '%ZZ',
  'invalid UTF-8': '%ED%A0%80',
}

/** Form-body values, percent-encoded. */
export const BAD_FORM_VALUES: Record<string, string> = {
  'long': LONG_TEXT,
  'unicode': '%F0%9F%98%80%E2%80%AE%D7%A9%D7%9C%D7%95%D7%9D',
  'NUL': 'a%00b',
  'control': '%01%07%1B',
  'invalid UTF-8 (lone surrogate)': '%ED%A0%80',
  'malformed %ZZ': '%ZZ',
  'empty': '',
}

/** The JSON types a schema admits, through unions and enums; empty when it does not say. */
export const typesOf = (schema: Schema): string[] => {
  if (Array.isArray(schema.type)) return schema.type
  if (typeof schema.type === 'string') return [schema.type]
  const branches = schema.anyOf ?? schema.oneOf ?? schema.allOf
  if (branches !== undefined) return branches.flatMap(typesOf)
  if (schema.enum !== undefined) return [...new Set(schema.enum.map((value) => (value === null ? 'null' : typeof value)))]
  return []
}

export const acceptsText = (schema: Schema): boolean => typesOf(schema).includes('string')
export const acceptsNumber = (schema: Schema): boolean => typesOf(schema).some((type) => type === 'number' || type === 'integer')
export const acceptsNull = (schema: Schema): boolean => schema.nullable === true || typesOf(schema).includes('null')

/** Whether a field or parameter takes integers and nothing else (null aside). */
export function integersOnly(schema: Schema): boolean {
  const types = typesOf(schema).filter((type) => type !== 'null')
  return types.length > 0 && types.every((type) => type === 'integer')
}

/** Values of a JSON type the field does not take: a mismatching scalar, an object, null. */
export function wrongTypes(schema: Schema): Array<[string, unknown]> {
  const types = typesOf(schema)
  const candidates: Array<[string, unknown, string[]]> = [
    ['a number', 12345, ['number', 'integer']],
    ['a string', '12345', ['string']],
    ['a boolean', true, ['boolean']],
    ['an object', { sweep: 1 }, ['object']],
    ['an array', ['sweep'], ['array']],
    ['null', null, ['null']],
  ]
  const wrong = candidates
    .filter(([name, , accepted]) => !accepted.some((type) => types.includes(type)) && !(name === 'null' && schema.nullable === true))
    .map(([name, value]): [string, unknown] => [name, value])
  // A scalar, a structure and null: the three ways a field's type goes wrong.
  const scalar = wrong.find(([name]) => name !== 'an object' && name !== 'an array' && name !== 'null')
  const structure = wrong.find(([name]) => name === 'an object' || name === 'an array')
  const none = wrong.find(([name]) => name === 'null')
  return [scalar, structure, none].filter((entry): entry is [string, unknown] => entry !== undefined)
}

/**
 * A valid-looking value: the first enum value, a format-aware string (email, uri, uuid, date-time),
 * min lengths and minimums respected. Field names hint at URLs and emails the schema does not
 * mark, so that mutations of the other fields reach the handler.
 */
export function exampleOf(schema: Schema, name = '', resolve: (schema: Schema) => Schema = (s) => s): unknown {
  schema = resolve(schema)
  if (schema.const !== undefined) return schema.const
  if (schema.default !== undefined) return schema.default
  if (schema.enum !== undefined && schema.enum.length > 0) return schema.enum[0]
  const branch = schema.anyOf?.[0] ?? schema.oneOf?.[0]
  if (branch !== undefined) return exampleOf(branch, name, resolve)
  if (schema.allOf !== undefined) return Object.assign({}, ...schema.allOf.map((part) => exampleOf(part, name, resolve) as object))
  const type = Array.isArray(schema.type) ? schema.type.find((each) => each !== 'null') : schema.type
  switch (type) {
    case 'string':
      return exampleText(schema, name)
    case 'integer':
    case 'number':
      return Math.max(schema.minimum ?? 1, Math.min(1, schema.maximum ?? 1))
    case 'boolean':
      return true
    case 'array':
      return Array.from({ length: Math.max(1, schema.minItems ?? 1) }, () => exampleOf(schema.items ?? {}, singular(name), resolve))
    case 'object':
      return exampleObject(schema, resolve, false)
    default:
      return 'sweep'
  }
}

/** The required properties only (`full`: every property). */
export function exampleObject(schema: Schema, resolve: (schema: Schema) => Schema = (s) => s, full = false): Record<string, unknown> {
  const object: Record<string, unknown> = {}
  for (const [key, property] of Object.entries(schema.properties ?? {})) {
    if (full || schema.required?.includes(key)) object[key] = exampleOf(property, key, resolve)
  }
  return object
}

const singular = (name: string) => name.replace(/s$/, '')

function exampleText(schema: Schema, name: string): string {
  const byFormat: Record<string, string> = {
    'email': 'sweep@example.com',
    'uri': 'https://client.example.com/callback',
    'url': 'https://client.example.com/callback',
    'uuid': '00000000-0000-4000-8000-000000000000',
    'date-time': '2026-01-01T00:00:00.000Z',
    'date': '2026-01-01',
  }
  let text = (schema.format !== undefined ? byFormat[schema.format] : undefined)
    ?? (/ur[il]$/i.test(name) ? 'https://client.example.com/callback' : /email/i.test(name) ? 'sweep@example.com' : 'sweep')
  if (schema.pattern !== undefined && !new RegExp(schema.pattern, 'u').test(text)) text = 'sweep'
  const min = schema.minLength ?? 0
  if (text.length < min) text = text + 'x'.repeat(min - text.length)
  if (schema.maxLength !== undefined && text.length > schema.maxLength) text = text.slice(0, schema.maxLength)
  return text
}
