import { Type, type Static, type TSchema } from 'typebox'

/**
 * A string or integer schema that also admits null, as a type list rather than a union: one
 * validation error instead of three, and no union for the response serializer to try in turn.
 * (The OpenAPI 3.0 document shows it as `nullable: true`.)
 */
export const Nullable = <T extends TSchema & { type: string }>(schema: T) => Type.Unsafe<Static<T> | null>({ ...schema, type: [schema.type, 'null'] })
