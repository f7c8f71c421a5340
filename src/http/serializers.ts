import { SerializerSelector, type SerializerFactory } from '@fastify/fast-json-stringify-compiler'
import type { FastifyReply } from 'fastify'

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

/**
 * Answers kept beside the cached values they were made from (a page of the catalogue or of the
 * registry: a cache hit is the same object). Each is serialized once by the route's own response
 * schema and encoded to UTF-8 once, so a hit sends the same bytes again: re-encoding a 20 KB page
 * on every hit was a sixth of what a cached catalogue page cost beyond a session read.
 */
export class SerializedAnswers<K extends object> {
  private readonly answers = new WeakMap<K, Buffer>()

  send(reply: FastifyReply, key: K, value: () => unknown): FastifyReply {
    let answer = this.answers.get(key)
    if (answer === undefined) this.answers.set(key, (answer = Buffer.from(reply.serialize(value()) as string)))
    return reply.type('application/json; charset=utf-8').send(answer)
  }
}
