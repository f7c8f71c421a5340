import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Backend, BackendError } from '../../examples/satellite/src/backend.js'
import { silentLogger } from '../../examples/satellite/src/logger.js'
import { Reports } from '../../examples/satellite/src/reports.js'
import { waitFor } from './support.js'

/**
 * A report the backend could not write because a concurrent change got in the way (409
 * CONFLICT: nothing was written, send it again) is sent again, like one that met an unreachable
 * backend; other refusals are final. A loopback receiver plays the backend.
 */
describe('reference satellite: a report refused by a concurrent change', () => {
  let receiver: Server
  let backend: Backend
  const answers: number[] = []
  const paths: string[] = []

  beforeAll(async () => {
    receiver = createServer((request, response) => {
      request.resume()
      request.on('end', () => {
        paths.push(request.url ?? '')
        const conflict = paths.length === 1
        answers.push(conflict ? 409 : 200)
        response.writeHead(conflict ? 409 : 200, { 'content-type': 'application/json' })
        response.end(JSON.stringify(conflict
          ? { success: false, error: 'A concurrent change got in the way of this one; nothing of it was written. Send it again.', code: 'CONFLICT' }
          : { success: true, data: { accepted: 1, ignored: 0 } }))
      })
    })
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
    backend = new Backend(`http://127.0.0.1:${(receiver.address() as AddressInfo).port}`)
    backend.use('sat-1', 'key')
  })

  afterAll(async () => {
    receiver.closeAllConnections()
    await new Promise((resolve) => receiver.close(resolve))
  })

  it('sends the observed state again after a 409 CONFLICT', async () => {
    const reports = new Reports(backend, silentLogger, () => ({ revision: 'r1', instances: [{ instance_id: 'i-1', spec_hash: 'h', phase: 'running' }] }))
    reports.observedChanged()
    await waitFor(() => answers.length === 2, 'the report sent again', 15_000)
    expect(answers).toEqual([409, 200])
    expect(paths[1]).toBe(paths[0])
    reports.close()
  }, 20_000)

  it('tells a conflict, a timeout and a rate limit (tried again) from the refusals that are final', () => {
    const final = (status: number, code?: string) => new BackendError(status, code, 'refused').refusedForGood
    expect([final(409, 'CONFLICT'), final(408), final(429), final(500), final(503)]).toEqual([false, false, false, false, false])
    expect([final(400, 'VALIDATION_ERROR'), final(404, 'NOT_FOUND'), final(409, 'SATELLITE_NAME_TAKEN'), final(403, 'SATELLITE_DISABLED')]).toEqual([true, true, true, true])
  })
})
