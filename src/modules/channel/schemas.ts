import { Type } from 'typebox'
import { DesiredDocument } from '../../formats/desired-state.js'
import { Ok } from '../../http/envelope.js'

const closed = { additionalProperties: false } as const
const Id = Type.String({ minLength: 1, maxLength: 100 })
const Timestamp = Type.String({ format: 'date-time' })

export const SatelliteParams = Type.Object({ id: Id }, closed)
export const InstanceParams = Type.Object({ id: Id, instanceId: Type.String({ minLength: 1, maxLength: 200 }) }, closed)

export const DesiredStateQuery = Type.Object({
  wait: Type.Optional(Type.Integer({
    minimum: 0, maximum: 30,
    description: 'Seconds to hold the request while the document still has the ETag sent in `If-None-Match` (long-poll); 0 or absent answers at once.',
  })),
}, closed)

export const DesiredStateEnvelope = Ok(DesiredDocument)

const Phase = Type.Union([Type.Literal('starting'), Type.Literal('running'), Type.Literal('degraded'), Type.Literal('failed'), Type.Literal('stopped')])

export const ObservedStateBody = Type.Object({
  revision: Type.String({ maxLength: 100, description: 'The revision of the document the satellite acts on.' }),
  instances: Type.Array(Type.Object({
    instance_id: Type.String({ minLength: 1, maxLength: 200 }),
    spec_hash: Type.String({ minLength: 1, maxLength: 100 }),
    phase: Phase,
    message: Type.Optional(Type.String({ maxLength: 2000 })),
    started_at: Type.Optional(Timestamp),
  }, closed), { maxItems: 5000 }),
}, closed)
export const ObservedStateEnvelope = Ok(Type.Object({ accepted: Type.Integer(), ignored: Type.Integer() }))

export const MAX_TOOLS = 1000
export const ToolsBody = Type.Object({
  tools: Type.Array(Type.Object({
    name: Type.String({ minLength: 1, maxLength: 200 }),
    title: Type.Optional(Type.String({ maxLength: 500 })),
    description: Type.Optional(Type.String({ maxLength: 20_000 })),
    input_schema: Type.Record(Type.String(), Type.Unknown()),
    output_schema: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: "The tool's `outputSchema`, when the server declares one; part of its definition hash." })),
    annotations: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  }, closed), { maxItems: MAX_TOOLS }),
}, { ...closed, examples: [{ tools: [{ name: 'search', input_schema: { type: 'object' } }] }] })
export const CountEnvelope = Ok(Type.Object({ stored: Type.Integer() }))

export const MAX_LOG_LINES = 500
export const LOG_LINE_BYTES = 8192
export const LogsBody = Type.Object({
  lines: Type.Array(Type.Object({
    at: Timestamp,
    stream: Type.Union([Type.Literal('stdout'), Type.Literal('stderr'), Type.Literal('event')]),
    text: Type.String({ maxLength: LOG_LINE_BYTES }),
  }, closed), { minItems: 1, maxItems: MAX_LOG_LINES }),
}, closed)
