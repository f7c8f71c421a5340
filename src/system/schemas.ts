import { Type } from 'typebox'
import { Ok } from '../http/envelope.js'

export const Health = Ok(
  Type.Object({
    status: Type.Literal('ok'),
    version: Type.String({ description: 'Package version of the running service (package.json): changes with every release.' }),
    api_version: Type.String({ description: 'Version of the API contract (the OpenAPI document\'s `info.version`): changes only when the API does.' }),
    uptime_s: Type.Integer({ description: 'Seconds since the process started.' }),
  }),
)

export const Ready = Ok(Type.Object({ status: Type.Literal('ready'), dialect: Type.Union([Type.Literal('sqlite'), Type.Literal('postgresql')]) }))

export const DbStatus = Ok(
  Type.Object({
    configured: Type.Boolean({ description: 'A database has been chosen (automatically or by setup).' }),
    initialized: Type.Boolean({ description: 'Migrations applied and settings seeded; the API is serving.' }),
    dialect: Type.Union([Type.Literal('sqlite'), Type.Literal('postgresql'), Type.Null()]),
  }),
)

export const DbSetupBody = Type.Object(
  {
    type: Type.Union([Type.Literal('sqlite'), Type.Literal('postgresql')], {
      description: 'Must match the dialect of DATABASE_URL; connection details never come from the body.',
    }),
  },
  { additionalProperties: false },
)
