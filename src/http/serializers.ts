import { SerializerSelector, type SerializerFactory } from '@fastify/fast-json-stringify-compiler'

/**
 * Fastify's response serializers (fast-json-stringify), one per schema object instead of one per
 * route and status. The routes share their schemas — every route answers its errors in the same
 * envelope — so the service's 450 response schemas are about 60 distinct objects; compiling each
 * of them once took a sixth of the start-up time away. A compiler is built per set of shared
 * schemas (Fastify builds one per context that adds schemas), so each cache serves one set, and a
 * schema object compiles to the same function whatever the route.
 */
export const sharedSerializers: SerializerFactory = (externalSchemas, options) => {
  const compile = SerializerSelector()(externalSchemas, options)
  const compiled = new WeakMap<object, ReturnType<typeof compile>>()
  return (route) => {
    const schema = route.schema
    if (schema === null || typeof schema !== 'object') return compile(route)
    let serializer = compiled.get(schema)
    if (serializer === undefined) compiled.set(schema, (serializer = compile(route)))
    return serializer
  }
}
