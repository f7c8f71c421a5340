import { Type } from 'typebox'
import { Nullable, Ok, Pagination, PaginationQuery } from '../../http/envelope.js'

const closed = { additionalProperties: false } as const
const Id = Type.String({ minLength: 1, maxLength: 100 })
const Outcome = Type.Union([Type.Literal('ok'), Type.Literal('error'), Type.Literal('refused')], {
  description: '`ok`: served; `error`: a JSON-RPC error or a result with `isError` true; `refused`: not served (a disabled, held or unknown tool).',
})

export const MAX_CALLS = 1000
export const MAX_DURATION_MS = 86_400_000
export const MAX_TOOL_NAME = 200

export const CallsBody = Type.Object({
  batch_id: Type.String({ format: 'uuid', description: 'Chosen by the satellite; a batch posted again with the same id (a retry) is counted once.' }),
  calls: Type.Array(Type.Object({
    at: Type.String({ format: 'date-time', description: 'When the call came in: at most an hour ahead of the backend\'s clock and within USAGE_RETENTION_DAYS, else the whole batch is refused (400).' }),
    user_id: Nullable(Type.String({ minLength: 1, maxLength: 200, description: "The `sub` of the caller's token." })),
    client_id: Nullable(Type.String({ minLength: 1, maxLength: 500, description: 'The OAuth client the token was issued to.' })),
    tool: Type.String({ minLength: 1, maxLength: MAX_TOOL_NAME }),
    outcome: Outcome,
    duration_ms: Type.Integer({ minimum: 0, maximum: MAX_DURATION_MS }),
  }, closed), { minItems: 1, maxItems: MAX_CALLS }),
}, closed)

export const CallsAnswer = Ok(Type.Object({
  accepted: Type.Integer({ description: 'Calls taken from this batch; 0 for a duplicate.' }),
  duplicate: Type.Boolean({ description: 'True when this satellite had posted a batch with this id before.' }),
}))

export const UsageParams = Type.Object({ teamId: Id }, closed)
const Group = (description?: string) => Type.Union([Type.Literal('tool'), Type.Literal('user'), Type.Literal('installation'), Type.Literal('day')], description === undefined ? {} : { description })
export const UsageQuery = Type.Object({
  from: Type.Optional(Type.String({ format: 'date-time', description: 'Start of the period (rounded down to the hour); default: 7 days before `to`.' })),
  to: Type.Optional(Type.String({ format: 'date-time', description: 'End of the period, excluded (rounded up to the hour); default: now.' })),
  group_by: Type.Optional(Group('Default `tool`.')),
}, closed)

export const UsageAnswer = Ok(Type.Object({
  from: Type.String({ description: 'The start of the period counted (an hour).' }),
  to: Type.String({ description: 'The end of the period counted, excluded (an hour).' }),
  group_by: Group(),
  rows: Type.Array(Type.Object({
    key: Nullable(Type.String({ description: 'The tool name, the user id (null for calls made without a user), the installation id, or the day (`YYYY-MM-DD`, UTC).' })),
    calls: Type.Integer(),
    ok: Type.Integer(),
    error: Type.Integer(),
    refused: Type.Integer(),
    avg_duration_ms: Type.Number(),
  })),
}))

export const InstallationCallsParams = Type.Object({ teamId: Id, id: Id }, closed)
export const CallsQuery = Type.Object({ ...PaginationQuery }, closed)
export const CallsPage = Ok(Type.Object({
  calls: Type.Array(Type.Object({
    id: Type.String(),
    at: Type.String(),
    instance_id: Type.String(),
    user_id: Nullable(Type.String()),
    client_id: Nullable(Type.String()),
    tool: Type.String(),
    outcome: Outcome,
    duration_ms: Type.Integer(),
  })),
  pagination: Pagination,
}))
