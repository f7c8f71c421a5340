import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Backend } from '../../examples/satellite/src/backend.js'
import { silentLogger } from '../../examples/satellite/src/logger.js'
import { Reports } from '../../examples/satellite/src/reports.js'
import { waitFor } from './support.js'

/**
 * The tool report carries each tool's `output_schema` when the server declares one (it is part
 * of the definition a team approves); a backend from before that field refuses it, and the
 * satellite then reports without it rather than not at all. A loopback receiver plays the backend.
 */
describe('reference satellite: the tool report', () => {
  let receiver: Server
  let backend: Backend
  let knowsOutputSchema = true
  const bodies: Array<{ status: number; tools: Array<Record<string, unknown>> }> = []

  beforeAll(async () => {
    receiver = createServer((request, response) => {
      const chunks: Buffer[] = []
      request.on('data', (chunk: Buffer) => chunks.push(chunk))
      request.on('end', () => {
        const { tools } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { tools: Array<Record<string, unknown>> }
        const unknown = tools.findIndex((tool) => 'output_schema' in tool)
        const refuse = !knowsOutputSchema && unknown !== -1
        bodies.push({ status: refuse ? 400 : 200, tools })
        response.writeHead(refuse ? 400 : 200, { 'content-type': 'application/json' })
        response.end(JSON.stringify(refuse
          ? { success: false, error: 'Validation failed', code: 'VALIDATION_ERROR', details: [{ field: `tools.${unknown}.output_schema`, message: 'is not allowed', in: 'body' }] }
          : { success: true, data: { stored: tools.length } }))
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

  const tools = [
    { name: 'plain', inputSchema: { type: 'object' as const } },
    { name: 'structured', title: 'Structured', inputSchema: { type: 'object' as const }, outputSchema: { type: 'object' as const, properties: { total: { type: 'number' } } } },
  ]

  it('sends output_schema when the server declares one', async () => {
    bodies.splice(0)
    const reports = new Reports(backend, silentLogger, () => undefined)
    reports.tools('i-1', tools)
    await waitFor(() => bodies.length === 1, 'the report')
    expect(bodies[0]!.tools).toEqual([
      { name: 'plain', input_schema: { type: 'object' } },
      { name: 'structured', title: 'Structured', input_schema: { type: 'object' }, output_schema: { type: 'object', properties: { total: { type: 'number' } } } },
    ])
    reports.close()
  })

  it('reports without it to a backend that refuses the field, from then on', async () => {
    bodies.splice(0)
    knowsOutputSchema = false
    const reports = new Reports(backend, silentLogger, () => undefined)
    reports.tools('i-1', tools)
    await waitFor(() => bodies.some((body) => body.status === 200), 'the report taken')
    expect(bodies.map((body) => body.status)).toEqual([400, 200])
    expect(bodies[1]!.tools.every((tool) => !('output_schema' in tool))).toBe(true)
    reports.tools('i-2', tools)
    await waitFor(() => bodies.length === 3, 'the next report')
    expect(bodies[2]!.status).toBe(200)
    reports.close()
  })
})
