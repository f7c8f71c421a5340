import Fastify, { type FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AccessLog } from '../../src/http/logging.js'
import { requestId } from '../../src/http/request-id.js'
import { captureLogs, type LogCapture } from '../helpers/log-capture.js'

/**
 * The access line is serialized by hand for loggers built from `loggerOptions`. It must be the
 * line pino itself writes: the same app with a logger pino formats (a log formatter that is not
 * ours turns the hand-written line off) must log the same bytes, time aside.
 */

async function appWith(logs: LogCapture, ownFormat: boolean): Promise<FastifyInstance> {
  const logger = logs.logger as { formatters: { log: (object: Record<string, unknown>) => Record<string, unknown> } }
  const formatted = ownFormat ? logger : { ...logger, formatters: { log: (object: Record<string, unknown>) => logger.formatters.log(object) } }
  const app = Fastify({ logger: formatted, logController: new AccessLog(), genReqId: requestId, requestIdHeader: false })
  app.decorateReply('errorCode', null)
  app.get('/ok', async () => ({ ok: true }))
  app.get('/teams/:id', async (_request, reply) => {
    reply.errorCode = 'NOT_FOUND'
    return reply.code(404).send({ success: false })
  })
  app.setNotFoundHandler(async (_request, reply) => {
    reply.errorCode = 'NOT_FOUND'
    return reply.code(404).send({ success: false })
  })
  await app.ready()
  return app
}

const URLS = ['/ok', '/ok?token=secret&x=1', '/teams/%22quoted%22?q=1', '/teams/%E2%9C%93', '/nowhere/"\\?a', '/teams/x\u00e9']

describe('the hand-written access line', () => {
  const hand = captureLogs('info')
  const pino = captureLogs('info')
  let apps: FastifyInstance[]

  beforeAll(async () => {
    apps = [await appWith(hand, true), await appWith(pino, false)]
  })
  afterAll(async () => {
    for (const app of apps) await app.close()
  })

  it('is the line pino writes, for answers with and without an error code, routed or not', async () => {
    for (const [index, url] of URLS.entries()) {
      for (const app of apps) {
        const response = await app.inject({ method: 'GET', url, headers: { 'x-request-id': `req-${index}` }, remoteAddress: '203.0.113.9' })
        expect(response.statusCode).toBeLessThan(500)
      }
    }
    const normalise = (line: string) => line.replace(/"time":\d+/, '"time":0').replace(/"responseTime":[0-9.e-]+/, '"responseTime":0')
    expect(hand.lines).toHaveLength(URLS.length)
    expect(hand.lines.map(normalise)).toEqual(pino.lines.map(normalise))
    // Both parse, and the query string (where links carry secrets) never reaches the log.
    const parsed = hand.lines.map((line) => JSON.parse(line) as Record<string, any>)
    expect(parsed[1]).toMatchObject({ level: 30, msg: 'request completed', reqId: 'req-1', req: { method: 'GET', url: '/ok?[query omitted]', remoteAddress: '203.0.113.9' }, res: { statusCode: 200 } })
    expect(parsed[2]).toMatchObject({ code: 'NOT_FOUND', route: '/teams/:id', res: { statusCode: 404 } })
    expect(parsed[4]).toMatchObject({ code: 'NOT_FOUND', req: { url: '/nowhere/%22/?[query omitted]' } })
    expect(parsed[4]!.route).toBeUndefined()
    expect(hand.text()).not.toContain('secret')
  })

  it('is not written below its level', async () => {
    const quiet = captureLogs('warn')
    const app = await appWith(quiet, true)
    await app.inject({ method: 'GET', url: '/ok' })
    await app.close()
    expect(quiet.lines).toEqual([])
  })
})
