import { Type, type Static, type TSchema } from 'typebox'
import { ERROR_CODES, type ErrorCode } from './error-codes.js'
import { isoTime } from '../lib/iso-time.js'

/** One envelope for every JSON answer. */

export const ERROR_SCHEMA_ID = 'ErrorResponse'

/** One failing field of a 400 `VALIDATION_ERROR`. */
export const FieldProblem = Type.Object(
  {
    field: Type.String({ description: 'The field, as a dotted path (`members.0.email`), or the part when the part itself fails.' }),
    message: Type.String(),
    in: Type.Optional(Type.String({ description: '`body`, `querystring`, `params` or `headers`.' })),
  },
  { additionalProperties: false },
)

/** What a 403 `FORBIDDEN` says was required (one member), or the refused `Origin` of a cross-site request. */
export const ForbiddenDetails = Type.Object(
  {
    required_permission: Type.Optional(Type.String({ description: 'A permission (`users.view`, `team.edit`, …) or `global_admin`.' })),
    required_scope: Type.Optional(Type.String({ description: 'The OAuth scope a bearer token lacks.' })),
    required_satellite: Type.Optional(Type.String({ description: 'A satellite key acts only on its own satellite.' })),
    required_role: Type.Optional(Type.String({ description: 'A team role, e.g. `owner`.' })),
    bound_team_id: Type.Optional(Type.String({ description: 'The one team the bearer token was bound to at consent: it reaches no other team.' })),
    origin: Type.Optional(Type.String({ description: 'The refused `Origin` of a cross-site request.' })),
  },
  { additionalProperties: false },
)

/** Why a registration token was refused (401 `INVALID_REGISTRATION_TOKEN`). */
export const RefusalDetails = Type.Object(
  { reason: Type.String({ description: '`malformed`, `bad_signature`, `expired`, `used`, `revoked`, `unknown`, …' }) },
  { additionalProperties: false },
)

/**
 * Every shape `details` takes. Each object is closed, so the response serializer (which tries
 * the shapes in turn) picks the right one; `AppError` accepts only these.
 */
export const ErrorDetails = Type.Union([Type.Array(FieldProblem), RefusalDetails, ForbiddenDetails], {
  description: 'Per-field problems (400 `VALIDATION_ERROR`), what was required (403 `FORBIDDEN`), or why a registration token was refused.',
})

export type FieldProblem = Static<typeof FieldProblem>
export type ForbiddenDetails = Static<typeof ForbiddenDetails>
export type ErrorDetails = Static<typeof ErrorDetails>

export const ErrorBody = Type.Object(
  {
    success: Type.Literal(false),
    error: Type.String({ description: 'Human-readable text; match on `code`, never on this.' }),
    code: Type.Unsafe<ErrorCode>({ type: 'string', enum: [...ERROR_CODES], description: 'Stable machine-readable code.' }),
    error_description: Type.Optional(Type.String({ description: 'OAuth protocol endpoints only: `error` is then the RFC 6749 error code and this is the text.' })),
    details: Type.Optional(ErrorDetails),
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

export { Nullable } from '../formats/nullable.js'

/** A nullable timestamp as the API writes every timestamp: ISO 8601 UTC, or null. */
export const isoOrNull = (date: Date | null): string | null => (date === null ? null : isoTime(date))
