import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { OutboundError, OutboundFetch } from '../../src/lib/outbound-fetch.js'
import { bearerChallenge, canonicalResource } from '../../src/modules/connections/resource.js'

/** The guard as a fetch-compatible function (what oauth4webapi's customFetch gets), on a plain http server of an allowed host. */
describe('OutboundFetch.fetcher', () => {
  let server: Server
  let base: string
  let host: string
  beforeAll(async () => {
    server = createServer((request, response) => {
      let body = ''
      request.on('data', (chunk: Buffer) => { body += chunk.toString() })
      request.on('end', () => {
        if (request.url === '/redirect') return void response.writeHead(302, { location: 'http://10.0.0.1/' }).end()
        if (request.url === '/empty') return void response.writeHead(204).end()
        response.writeHead(request.url === '/error' ? 400 : 200, { 'content-type': 'application/json', 'x-seen-method': request.method ?? '' })
        response.end(JSON.stringify({ method: request.method, type: request.headers['content-type'] ?? null, body }))
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    host = `127.0.0.1:${(server.address() as AddressInfo).port}`
    base = `http://${host}`
  })
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

  const allowed = () => new OutboundFetch({ allowedHosts: [host], timeoutMs: 2000 }).fetcher({ allowHttp: true })

  it('sends any method with its headers and a string or form body, and reads the body whatever the status', async () => {
    const posted = await allowed()(`${base}/token`, { method: 'POST', headers: { accept: 'application/json' }, body: new URLSearchParams({ grant_type: 'x' }) })
    expect(await posted.json()).toEqual({ method: 'POST', type: 'application/x-www-form-urlencoded;charset=UTF-8', body: 'grant_type=x' })
    const refused = await allowed()(`${base}/error`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":1}' })
    expect(refused.status).toBe(400)
    expect(await refused.json()).toMatchObject({ body: '{"a":1}' })
    expect((await allowed()(`${base}/empty`)).status).toBe(204)
  })

  it('answers a redirect as it is, never following it', async () => {
    const response = await allowed()(`${base}/redirect`, { redirect: 'manual' })
    expect(response.status).toBe(302)
    expect(response.headers.get('location')).toBe('http://10.0.0.1/')
  })

  it('refuses plain http and loopback for a host not allowed, and private addresses over https', async () => {
    const guarded = new OutboundFetch({ allowedHosts: [], timeoutMs: 2000 }).fetcher({ allowHttp: true })
    await expect(guarded(`${base}/token`)).rejects.toMatchObject({ reason: 'not_https' })
    await expect(guarded('https://127.0.0.1:1/x')).rejects.toBeInstanceOf(OutboundError)
    await expect(guarded('https://10.1.2.3/x')).rejects.toMatchObject({ reason: 'refused_address' })
    await expect(guarded('https://[::1]/x')).rejects.toMatchObject({ reason: 'refused_address' })
  })
})

describe('the remote server as a resource', () => {
  it('canonical URIs: scheme and host lower case, no fragment, path and query kept', () => {
    expect(canonicalResource('HTTPS://MCP.Example.COM/Mcp?Tenant=A#x')).toBe('https://mcp.example.com/Mcp?Tenant=A')
    expect(canonicalResource('https://mcp.example.com')).toBe('https://mcp.example.com')
  })

  it.each([
    ['Bearer resource_metadata="https://a.example/.well-known/oauth-protected-resource/mcp", scope="files:read files:write"', 'https://a.example/.well-known/oauth-protected-resource/mcp', ['files:read', 'files:write']],
    ['Bearer error="invalid_token", resource_metadata="https://a.example/m"', 'https://a.example/m', []],
    ['Basic realm="x", Bearer scope=read', null, ['read']],
    ['Bearer', null, []],
  ])('reads the Bearer challenge %s', (header, metadata, scopes) => {
    expect(bearerChallenge(header)).toEqual({ resourceMetadata: metadata, scopes })
  })

  it('no Bearer challenge: not OAuth', () => {
    expect(bearerChallenge('Basic realm="x"')).toBeNull()
    expect(bearerChallenge(undefined)).toBeNull()
  })
})
