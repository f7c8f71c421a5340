import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { Backend } from '../../examples/satellite/src/backend.js'
import { CALL_BATCH, CALL_QUEUE, CallLog } from '../../examples/satellite/src/calls.js'
import type { Logger } from '../../examples/satellite/src/logger.js'
import type { ToolCallRecord } from '../../examples/satellite/src/types.js'
import { waitFor } from './support.js'

/**
 * The satellite's tool-call records on their way to the backend (a loopback receiver here): a
 * full batch goes at once, a smaller one after the wait; a batch the backend fails is sent again
 * with the same id and records; at most CALL_QUEUE records wait per instance, the oldest dropped
 * and counted in a log line; flush sends what waits (a clean stop).
 */
interface Post {
  path: string
  body: { batch_id: string; calls: ToolCallRecord[] }
  status: number
}

const call = (index: number): ToolCallRecord => ({ at: new Date().toISOString(), user_id: 'u', client_id: 'c', tool: `tool-${index}`, outcome: 'ok', duration_ms: index % 50 })

describe('reference satellite: tool-call records', () => {
  let receiver: Server
  let backend: Backend
  const posts: Post[] = []
  let answer = 200
  const lines: string[] = []
  const log: Logger = { info: (line) => lines.push(line), warn: (line) => lines.push(line), error: (line) => lines.push(line) }

  beforeAll(async () => {
    receiver = createServer((request, response) => {
      const chunks: Buffer[] = []
      request.on('data', (chunk: Buffer) => chunks.push(chunk))
      request.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Post['body']
        const status = answer
        posts.push({ path: request.url ?? '', body, status })
        response.writeHead(status, { 'content-type': 'application/json' })
        response.end(JSON.stringify(status === 200 ? { success: true, data: { accepted: body.calls.length, duplicate: false } } : { success: false, error: 'nope', code: status === 404 ? 'NOT_FOUND' : 'INTERNAL_ERROR' }))
      })
    })
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
    backend = new Backend(`http://127.0.0.1:${(receiver.address() as AddressInfo).port}`)
    backend.use('sat-1', 'key')
  })

  beforeEach(() => {
    posts.splice(0)
    lines.splice(0)
    answer = 200
  })

  afterAll(async () => {
    receiver.closeAllConnections()
    await new Promise((resolve) => receiver.close(resolve))
  })

  it('posts a full batch at once and the rest after the wait, per instance', async () => {
    const calls = new CallLog(backend, log, { flushMs: 300 })
    for (let index = 0; index < CALL_BATCH; index += 1) calls.record('i-1', call(index))
    calls.record('i-2', call(0))
    await waitFor(() => posts.length >= 1, 'the full batch')
    expect(posts[0]!.path).toBe('/api/satellites/sat-1/instances/i-1/calls')
    expect(posts[0]!.body.calls).toHaveLength(CALL_BATCH)
    await waitFor(() => posts.some((post) => post.path.endsWith('/i-2/calls')), 'the other instance after the wait')
    // The receiver has the post a moment before the log has read its answer and let the batch go.
    await waitFor(() => calls.pending === 0, 'nothing pending once both were answered')
    expect(new Set(posts.map((post) => post.body.batch_id)).size).toBe(posts.length)
    calls.close()
  })

  it('keeps at most CALL_QUEUE records while the backend fails, dropping the oldest with a log line, and resends the failed batch with the same id', async () => {
    answer = 500
    const calls = new CallLog(backend, log, { flushMs: 200 })
    const total = CALL_QUEUE + 1500
    for (let index = 0; index < total; index += 1) calls.record('i-1', call(index))
    expect(calls.pending).toBe(CALL_QUEUE)
    await waitFor(() => posts.length >= 2, 'two failed attempts')
    expect(posts[1]!.body.batch_id).toBe(posts[0]!.body.batch_id)
    expect(posts[1]!.body.calls).toEqual(posts[0]!.body.calls)
    expect(lines.some((line) => /1500 tool call record\(s\) of instance i-1 were dropped/.test(line))).toBe(true)
    answer = 200
    await waitFor(() => calls.pending === 0, 'everything sent once the backend answers', 15_000)
    const taken = posts.filter((post) => post.status === 200)
    const tools = taken.flatMap((post) => post.body.calls.map((record) => record.tool))
    expect(tools).toHaveLength(CALL_QUEUE)
    // The first batch was cut before the excess arrived; the oldest after it were dropped.
    expect(tools.slice(0, CALL_BATCH)).toEqual(Array.from({ length: CALL_BATCH }, (_, index) => `tool-${index}`))
    expect(tools[CALL_BATCH]).toBe(`tool-${CALL_BATCH + 1500}`)
    expect(tools.at(-1)).toBe(`tool-${total - 1}`)
    expect(taken[0]!.body.batch_id).toBe(posts[0]!.body.batch_id)
    calls.close()
  })

  it('flushes what waits on a clean stop, and drops a batch the backend refuses for good (404: the instance left)', async () => {
    const calls = new CallLog(backend, log, { flushMs: 60_000 })
    calls.record('i-1', call(1))
    calls.record('i-1', call(2))
    await calls.flush(5000)
    expect(posts).toHaveLength(1)
    expect(posts[0]!.body.calls.map((record) => record.tool)).toEqual(['tool-1', 'tool-2'])
    answer = 404
    calls.record('gone', call(3))
    await calls.flush(5000)
    expect(posts).toHaveLength(2)
    expect(calls.pending).toBe(0)
    calls.close()
  })
})
