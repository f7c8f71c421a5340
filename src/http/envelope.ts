import { Type, type Static, type TSchema } from 'typebox'

/** One envelope for every JSON answer. */

export const ERROR_SCHEMA_ID = 'ErrorResponse'

export const ErrorBody = Type.Object(
  {
    success: Type.Literal(false),
    error: Type.String({ description: 'Human-readable text; match on `code`, never on this.' }),
    code: Type.String({ description: 'Stable machine-readable code.' }),
    error_description: Type.Optional(Type.String({ description: 'OAuth protocol endpoints only: `error` is then the RFC 6749 error code and this is the text.' })),
    details: Type.Optional(Type.Unknown({ description: 'Per-field problems, or what was required.' })),
  },
  { $id: ERROR_SCHEMA_ID, description: 'Error envelope' },
)

/** Reference to the shared error schema, for response maps. */
export const ErrorRef = Type.Ref(ERROR_SCHEMA_ID)

export const Ok = <T extends TSchema>(data: T, description?: string) =>
  Type.Object(
    {
      success: Type.Literal(true),
      message: Type.Optional(Type.String()),
      data,
    },
    description ? { description } : {},
  )

export const OkMessage = Type.Object({ success: Type.Literal(true), message: Type.String() })

/**
 * The deepest offset a list serves. Offsets are bounded like every number a query string takes
 * (the route guard refuses an unbounded one at boot); deeper pages of an `OFFSET` scan would be
 * slow anyway, and lists offer filters to narrow them instead.
 */
export const MAX_OFFSET = 1_000_000

/** Every list: `limit` 1–100 (default 20), `offset` 0–1 000 000 (default 0); out of range → 400. */
export const PaginationQuery = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_OFFSET, default: 0 })),
}

export const Pagination = Type.Object({
  total: Type.Integer(),
  limit: Type.Integer(),
  offset: Type.Integer(),
  has_more: Type.Boolean(),
})

export const paginate = (total: number, limit: number, offset: number) => ({
  total,
  limit,
  offset,
  has_more: offset + limit < total,
})

/**
 * A string or integer schema that also admits null, as a type list rather than a union: one
 * validation error instead of three, and no union for the response serializer to try in turn.
 * (The OpenAPI 3.0 document shows it as `nullable: true`.)
 */
export const Nullable = <T extends TSchema & { type: string }>(schema: T) => Type.Unsafe<Static<T> | null>({ ...schema, type: [schema.type, 'null'] })

/** A nullable timestamp as the API writes every timestamp: ISO 8601 UTC, or null. */
export const isoOrNull = (date: Date | null): string | null => (date === null ? null : date.toISOString())
