import Fastify, { type FastifyInstance } from 'fastify'
import { pino as pinoLogger } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AccessLog, millis } from '../../src/http/logging.js'
import { requestId } from '../../src/http/request-id.js'
import { RequestLogger, requestLoggerFactory } from '../../src/http/request-logger.js'
import { captureLogs, type LogCapture } from '../helpers/log-capture.js'

/**
 * The access line is serialized by hand for loggers built from `loggerOptions`, and a request's
 * own logger is built only when it writes a line of its own. The lines must be those pino itself
 * writes: the same app with a logger pino formats (a log formatter that is not ours turns the
 * hand-written line off) must log the same bytes, time aside.
 */

async function appWith(logs: LogCapture, ownFormat: boolean): Promise<FastifyInstance> {
  const logger = logs.logger as { formatters: { log: (object: Record<string, unknown>) => Record<string, unknown> } }
  const formatted = ownFormat ? logger : { ...logger, formatters: { log: (object: Record<string, unknown>) => logger.formatters.log(object) } }
  const app = Fastify({ logger: formatted, logController: new AccessLog(), childLoggerFactory: requestLoggerFactory, genReqId: requestId, requestIdHeader: false })
  app.decorateReply('errorCode', null)
  app.get('/ok', async () => ({ ok: true }))
  app.get('/says', async (request) => {
    request.log.debug('below the level')
    request.log.info({ step: 1 }, 'a line of its own')
    return { ok: true }
  })
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

const URLS = ['/ok', '/ok?token=secret&x=1', '/teams/%22quoted%22?q=1', '/teams/%E2%9C%93', '/nowhere/"\\?a', '/teams/x\u00e9', '/says']

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
    // One access line per request, and the route's own line before its access line.
    expect(hand.lines).toHaveLength(URLS.length + 1)
    expect(hand.lines.map(normalise)).toEqual(pino.lines.map(normalise))
    // Both parse, and the query string (where links carry secrets) never reaches the log.
    const parsed = hand.lines.map((line) => JSON.parse(line) as Record<string, any>)
    expect(parsed[1]).toMatchObject({ level: 30, msg: 'request completed', reqId: 'req-1', req: { method: 'GET', url: '/ok?[query omitted]', remoteAddress: '203.0.113.9' }, res: { statusCode: 200 } })
    expect(parsed[2]).toMatchObject({ code: 'NOT_FOUND', route: '/teams/:id', res: { statusCode: 404 } })
    expect(parsed[4]).toMatchObject({ code: 'NOT_FOUND', req: { url: '/nowhere/%22/?[query omitted]' } })
    expect(parsed[4]!.route).toBeUndefined()
    expect(parsed[6]).toMatchObject({ level: 30, msg: 'a line of its own', step: 1, reqId: 'req-6' })
    expect(parsed[7]).toMatchObject({ msg: 'request completed', reqId: 'req-6', req: { url: '/says' } })
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

describe('a request logger', () => {
  it('follows its parent level until it is built, then logs as a pino child would', () => {
    const lines: string[] = []
    const parent = pinoLogger({ level: 'warn' }, { write: (line: string) => void lines.push(line) })
    const log = requestLoggerFactory.call({} as never, parent, { reqId: 'r-1' }, {}, {} as never) as unknown as RequestLogger
    expect(log).toBeInstanceOf(RequestLogger)
    log.info('dropped')
    expect(log.level).toBe('warn')
    parent.level = 'info'
    expect(log.isLevelEnabled('info')).toBe(true)
    log.info({ n: 1 }, 'kept')
    log.level = 'error'
    log.warn('dropped too')
    expect(parent.level).toBe('info')
    log.child({ sub: true }).error('from a child')
    expect(lines.map((line) => JSON.parse(line) as Record<string, unknown>)).toMatchObject([
      { level: 30, reqId: 'r-1', n: 1, msg: 'kept' },
      { level: 50, reqId: 'r-1', sub: true, msg: 'from a child' },
    ])
  })

  it('is pino\u2019s own child when a route asks for options of its own', () => {
    const parent = pinoLogger({ level: 'info' })
    expect(requestLoggerFactory.call({} as never, parent, { reqId: 'r-2' }, { level: 'debug' }, {} as never)).not.toBeInstanceOf(RequestLogger)
  })

  it('gives the response time in milliseconds to the microsecond, as a JSON number', () => {
    const cases: Array<[number, string]> = [[0, '0.000'], [0.0004, '0.000'], [0.0006, '0.001'], [0.012345, '0.012'], [1.23456789, '1.235'], [12.04, '12.040'], [1234.5, '1234.500']]
    for (const [ms, text] of cases) {
      expect(millis(ms)).toBe(text)
      expect(JSON.parse(millis(ms))).toBeCloseTo(ms, 3)
    }
  })
})
