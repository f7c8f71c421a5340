import Fastify from 'fastify'
import { Type } from 'typebox'
import { describe, expect, it } from 'vitest'
import { SerializedAnswers, sharedSerializers } from '../../src/http/serializers.js'
import { lazy } from '../../src/lib/lazy.js'

const Envelope = Type.Object({ success: Type.Boolean(), error: Type.String() })
const Item = Type.Object({ id: Type.String(), count: Type.Integer() })

describe('response serializers shared by schema object', () => {
  it('compiles a schema object once, whatever the route and status', () => {
    const compile = sharedSerializers({}, {})
    const first = compile({ schema: Envelope, method: 'GET', url: '/a', httpStatus: '404' })
    expect(compile({ schema: Envelope, method: 'POST', url: '/b', httpStatus: '409' })).toBe(first)
    // An equal but distinct object is a schema of its own.
    expect(compile({ schema: structuredClone(Envelope), method: 'GET', url: '/a', httpStatus: '404' })).not.toBe(first)
    expect(first({ success: false, error: 'Not found.', extra: 'dropped' })).toBe('{"success":false,"error":"Not found."}')
  })

  it('keeps each set of shared schemas apart: a $ref resolves against its own context', async () => {
    const app = Fastify({ schemaController: { compilersFactory: { buildSerializer: sharedSerializers } } })
    const Answer = Type.Object({ item: Type.Ref('Item') })
    for (const [prefix, shared] of [['/one', Item], ['/two', Type.Object({ id: Type.String(), label: Type.String() })]] as const) {
      await app.register(async (scope) => {
        scope.addSchema({ ...shared, $id: 'Item' })
        scope.get('/', { schema: { response: { 200: Answer } } }, async () => ({ item: { id: 'x', count: 2, label: 'L' } }))
      }, { prefix })
    }
    expect((await app.inject('/one')).json()).toEqual({ item: { id: 'x', count: 2 } })
    expect((await app.inject('/two')).json()).toEqual({ item: { id: 'x', label: 'L' } })
    await app.close()
  })
})

describe('lazy', () => {
  it('makes its value on first use only, once, even when the value is undefined', () => {
    let made = 0
    const value = lazy(() => {
      made++
      return undefined
    })
    expect(made).toBe(0)
    expect(value()).toBeUndefined()
    expect(value()).toBeUndefined()
    expect(made).toBe(1)
  })
})

describe('answers serialized and encoded once', () => {
  it('sends the same UTF-8 bytes on every hit, through the route schema, built once per key', async () => {
    const app = Fastify()
    const answers = new SerializedAnswers<{ name: string }>()
    const pages = { a: { name: 'Zürich ✓ "café"' }, b: { name: 'plain' } }
    let built = 0
    app.get('/page/:key', { schema: { response: { 200: Type.Object({ name: Type.String(), length: Type.Integer() }) } } }, async (request, reply) => {
      const page = pages[(request.params as { key: 'a' | 'b' }).key]
      return answers.send(reply, page, () => {
        built++
        // A field the schema does not name is left out, as for any answer.
        return { name: page.name, length: page.name.length, secret: 'not sent' }
      })
    })
    const first = await app.inject({ method: 'GET', url: '/page/a' })
    const again = await app.inject({ method: 'GET', url: '/page/a' })
    expect(first.statusCode).toBe(200)
    expect(first.headers['content-type']).toBe('application/json; charset=utf-8')
    expect(first.json()).toEqual({ name: 'Zürich ✓ "café"', length: 15 })
    expect(again.rawPayload.equals(first.rawPayload)).toBe(true)
    expect(Number(again.headers['content-length'])).toBe(first.rawPayload.length)
    expect(built).toBe(1)
    // Another key has its own answer.
    expect((await app.inject({ method: 'GET', url: '/page/b' })).json()).toEqual({ name: 'plain', length: 5 })
    expect(built).toBe(2)
    await app.close()
  })
})
