import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { ConfigError, configFromEnv } from '../../examples/satellite/src/config.js'
import { guardedFetch, UNRESTRICTED, type EgressRule, type Exchange } from '../../examples/satellite/src/egress.js'
import { ManagedInstance } from '../../examples/satellite/src/instance.js'
import { SatelliteKeys } from '../../examples/satellite/src/sealing.js'
import type { Instance } from '../../examples/satellite/src/types.js'
import { failureBody, startRemoteServer, type RemoteServer } from './remote-server.js'
import { everythingInstance, recordingHooks, waitFor, type Recorded } from './support.js'

const MARKER = 'UPSTREAM-BODY-MARKER-7c1e'
const FAILURE_BYTES = Buffer.byteLength(failureBody(MARKER))

/**
 * What a remote target may make the satellite reach. On a satellite shared by several teams: public
 * addresses only (loopback, private, link-local… refused before any connection), unless the operator
 * allows the host; the address checked is the one connected to; redirects are not followed. On a
 * team's own satellite: anything. Either way, what the server answered never reaches the instance's
 * status or logs — only its status and size.
 */
describe('reference satellite: egress of remote instances', () => {
  let keys: SatelliteKeys
  let remote: RemoteServer
  /** Where the redirect points: it must never be asked anything. */
  let target: RemoteServer
  const running: ManagedInstance[] = []

  const remoteSpec = (url: string, transport: 'streamable-http' | 'sse' = 'streamable-http'): Instance => ({
    ...everythingInstance({ spec_hash: `remote-${running.length}` }),
    launch: { kind: 'remote', url, transport, headers: {} },
  })

  /** An instance of `spec` under `egress` (undefined: the default, a shared satellite's rule). */
  const start = (spec: Instance, egress: EgressRule | undefined): { instance: ManagedInstance; recorded: Recorded } => {
    const recorded = recordingHooks()
    const instance = new ManagedInstance(spec, { keys, packageDirs: [], startTimeoutMs: 10_000, hooks: recorded.hooks, ...(egress === undefined ? {} : { egress }) })
    running.push(instance)
    instance.update(spec)
    return { instance, recorded }
  }
  const failure = (instance: ManagedInstance) => waitFor(() => instance.phase === 'failed' && instance.message, 'the instance to fail')
  const shared = (allowedHosts: string[] = []): EgressRule => ({ restricted: true, allowedHosts })

  beforeAll(async () => {
    keys = await SatelliteKeys.generate()
    target = await startRemoteServer()
    remote = await startRemoteServer({ marker: MARKER, redirectTo: target.url('/mcp') })
  })
  afterEach(async () => {
    await Promise.all(running.splice(0).map((instance) => instance.remove()))
  })
  afterAll(async () => {
    await remote?.close()
    await target?.close()
  })

  describe('on a satellite shared by several teams', () => {
    it('refuses a loopback target before connecting: the server receives no request', async () => {
      const before = remote.requests.length
      const { instance, recorded } = start(remoteSpec(remote.url('/mcp')), undefined)
      const message = await failure(instance)
      expect(message).toMatch(/^127\.0\.0\.1 is a non-public address \(loopback\); a satellite shared by several teams reaches public addresses only, unless its operator allows the host \(EGRESS_ALLOWED_HOSTS\)$/)
      expect(recorded.logs.some((line) => line.stream === 'event' && line.text.startsWith(`failed: ${message}`))).toBe(true)
      expect(remote.requests.length).toBe(before)
    })

    it('refuses a host name that resolves to loopback, and every other way of writing a non-public address', async () => {
      const before = remote.requests.length
      const cases: Array<[string, RegExp]> = [
        [`http://localhost:${remote.port}/mcp`, /^localhost resolves to a non-public address \(loopback\)/],
        [`http://[::1]:${remote.port}/mcp`, /^\[::1\] is a non-public address \(loopback\)/],
        [`http://[::ffff:127.0.0.1]:${remote.port}/mcp`, /^\[::ffff:7f00:1\] is a non-public address \(loopback\)/],
        [`http://127.1:${remote.port}/mcp`, /^127\.0\.0\.1 is a non-public address \(loopback\)/],
        [`http://0.0.0.0:${remote.port}/mcp`, /is a non-public address \(unspecified\)/],
        ['http://169.254.169.254/latest/meta-data/', /is a non-public address \(link-local\)/],
        ['http://10.0.0.7:5432/', /is a non-public address \(private\)/],
        ['http://100.64.0.1/', /is a non-public address \(carrier-grade NAT\)/],
        ['https://[fd00::1]/mcp', /is a non-public address \(unique-local\)/],
        ['https://[fe80::1]/mcp', /is a non-public address \(link-local\)/],
        ['https://[64:ff9b::a00:1]/mcp', /is a non-public address \(private, NAT64\)/],
      ]
      const started = cases.map(([url]) => start(remoteSpec(url), shared()).instance)
      for (const [index, [url, expected]] of cases.entries()) expect(await failure(started[index]!), url).toMatch(expected)
      expect(remote.requests.length).toBe(before)
    })

    it('reaches a host its operator allows (EGRESS_ALLOWED_HOSTS): tools, calls and notifications on the long-lived event stream; a stop closes that stream', async () => {
      const { instance, recorded } = start(remoteSpec(remote.url('/mcp')), shared([`127.0.0.1:${remote.port}`]))
      await waitFor(() => instance.phase === 'running', 'the remote instance to run')
      expect(recorded.tools.get(instance.id)!.map((tool) => tool.name)).toEqual(['ping'])
      const answer = await instance.upstream!.client.callTool({ name: 'ping', arguments: {} })
      expect(answer.content).toEqual([{ type: 'text', text: 'pong' }])
      // The standalone GET stream carries what the server says unasked.
      await waitFor(() => remote.requests.some((request) => request.method === 'GET' && request.path === '/mcp') && remote.openStreams() > 0, 'the event stream')
      remote.addTool('added-later')
      await waitFor(() => recorded.tools.get(instance.id)?.some((tool) => tool.name === 'added-later'), 'the tool list change over the event stream')
      await instance.remove()
      await waitFor(() => remote.openStreams() === 0, 'the event stream to close')
    })

    it('an allowed host without a port admits every port; with another port it does not', async () => {
      const anyPort = start(remoteSpec(remote.url('/mcp')), shared(['127.0.0.1'])).instance
      await waitFor(() => anyPort.phase === 'running', 'the remote instance to run')
      const otherPort = start(remoteSpec(remote.url('/mcp')), shared([`127.0.0.1:${remote.port + 1}`, `localhost:${remote.port}`])).instance
      expect(await failure(otherPort)).toMatch(/non-public address \(loopback\)/)
    })

    it('reaches an allowed host over the older HTTP+SSE transport too, and a stop ends its stream', async () => {
      const { instance, recorded } = start(remoteSpec(remote.url('/sse'), 'sse'), shared([`127.0.0.1:${remote.port}`]))
      await waitFor(() => instance.phase === 'running', 'the SSE instance to run')
      expect((await instance.upstream!.client.callTool({ name: 'ping', arguments: {} })).content).toEqual([{ type: 'text', text: 'pong' }])
      remote.addTool('added-over-sse')
      await waitFor(() => recorded.tools.get(instance.id)?.some((tool) => tool.name === 'added-over-sse'), 'the tool list change over SSE')
      await instance.remove()
      await waitFor(() => remote.openStreams() === 0, 'the SSE stream to close')
    })

    it('does not follow a redirect, even to an allowed host: the failure says so and the target receives no request', async () => {
      const allowed = shared([`127.0.0.1:${remote.port}`, `127.0.0.1:${target.port}`])
      for (const transport of ['streamable-http', 'sse'] as const) {
        const { instance } = start(remoteSpec(remote.url('/redirect'), transport), allowed)
        expect(await failure(instance), transport).toBe('the server answered with a redirect, which is not followed (HTTP 302)')
      }
      expect(remote.requests.filter((request) => request.path === '/redirect').length).toBeGreaterThanOrEqual(2)
      expect(target.requests).toEqual([])
    })
  })

  it('an upstream that answers 500: the failure and the log lines give its status and size, never its body', async () => {
    for (const transport of ['streamable-http', 'sse'] as const) {
      for (const egress of [shared([`127.0.0.1:${remote.port}`]), UNRESTRICTED]) {
        const { instance, recorded } = start(remoteSpec(remote.url('/fail'), transport), egress)
        const message = await failure(instance)
        expect(message, transport).toBe(`the server answered HTTP 500 (${FAILURE_BYTES} bytes)`)
        expect(instance.observed().message).toBe(message)
        const failed = recorded.logs.filter((line) => line.text.startsWith('failed:'))
        expect(failed.length).toBeGreaterThan(0)
        for (const line of failed) expect(line.text).toContain(`HTTP 500 (${FAILURE_BYTES} bytes)`)
        for (const line of recorded.logs) expect(line.text).not.toContain(MARKER)
        for (const phase of recorded.phases) expect(phase.message ?? '').not.toContain(MARKER)
      }
    }
  })

  it('an upstream whose answers are not MCP: the failure gives what happened, never the words it answered', async () => {
    const cases: Array<[string, string]> = [
      ['/garbage', `the server's answer (HTTP 200, ${Buffer.byteLength(`<html>${failureBody(MARKER)}</html>`)} bytes) is not usable MCP`],
      ['/rpc-error', 'the server answered with MCP error -32603'],
    ]
    for (const [path, expected] of cases) {
      const { instance, recorded } = start(remoteSpec(remote.url(path)), UNRESTRICTED)
      expect(await failure(instance), path).toBe(expected)
      for (const line of recorded.logs) expect(line.text).not.toContain(MARKER)
    }
  })

  it('on a team satellite a loopback target works without any allowance', async () => {
    const { instance } = start(remoteSpec(remote.url('/mcp')), UNRESTRICTED)
    await waitFor(() => instance.phase === 'running', 'the remote instance to run')
    expect((await instance.upstream!.client.callTool({ name: 'ping', arguments: {} })).content).toEqual([{ type: 'text', text: 'pong' }])
  })

  describe('the guarded fetch', () => {
    it('resolves a name once and connects to the address it resolved (no second lookup), keeping the name in Host', async () => {
      const asked: string[] = []
      const exchanges: Exchange[] = []
      const fetch = guardedFetch(shared([`pinned.invalid:${remote.port}`]), (exchange) => void exchanges.push(exchange), async (hostname) => {
        asked.push(hostname)
        return [{ address: '127.0.0.1', family: 4 }]
      })
      // The system resolver knows no `.invalid` name (RFC 6761): only the pinned answer reaches the server.
      const response = await fetch(`http://pinned.invalid:${remote.port}/fail`, { method: 'GET' })
      expect(response.status).toBe(500)
      expect(await response.text()).toBe('')
      expect(response.statusText).toBe('')
      expect(asked).toEqual(['pinned.invalid'])
      expect(remote.requests.at(-1)).toEqual({ method: 'GET', path: '/fail', host: `pinned.invalid:${remote.port}` })
      expect(exchanges).toEqual([{ kind: 'answer', status: 500, bytes: FAILURE_BYTES, complete: true }])
    })

    it('refuses a name when any of its addresses is not public, without connecting', async () => {
      const before = remote.requests.length
      const exchanges: Exchange[] = []
      const fetch = guardedFetch(shared(), (exchange) => void exchanges.push(exchange), async () => [{ address: '93.184.215.14', family: 4 }, { address: '127.0.0.1', family: 4 }])
      await expect(fetch(`http://mixed.invalid:${remote.port}/mcp`)).rejects.toThrow(/mixed\.invalid resolves to a non-public address \(loopback\)/)
      expect(exchanges).toEqual([{ kind: 'failure', reason: expect.stringMatching(/^mixed\.invalid resolves to a non-public address/) }])
      expect(remote.requests.length).toBe(before)
    })

    it('says why a connection failed by its error code only', async () => {
      const exchanges: Exchange[] = []
      const fetch = guardedFetch(UNRESTRICTED, (exchange) => void exchanges.push(exchange))
      const closed = await startRemoteServer()
      await closed.close()
      await expect(fetch(closed.url('/mcp'))).rejects.toThrow()
      expect(exchanges).toEqual([{ kind: 'failure', reason: 'the server could not be reached (ECONNREFUSED)' }])
    })

    it('an abort ends the request and its streamed answer, and is not reported as a failure', async () => {
      const exchanges: Exchange[] = []
      const fetch = guardedFetch(UNRESTRICTED, (exchange) => void exchanges.push(exchange))
      const controller = new AbortController()
      const response = await fetch(remote.url('/sse'), { headers: { accept: 'text/event-stream' }, signal: controller.signal })
      expect(response.status).toBe(200)
      const reader = response.body!.getReader()
      const first = new TextDecoder().decode((await reader.read()).value)
      expect(first).toContain('event: endpoint')
      await waitFor(() => remote.openStreams() > 0, 'the stream to be open')
      controller.abort()
      await expect(reader.read()).rejects.toThrow()
      await waitFor(() => remote.openStreams() === 0, 'the server to see the stream closed')
      expect(exchanges).toEqual([{ kind: 'answer', status: 200, bytes: expect.any(Number), complete: false }])
      await expect(fetch(remote.url('/mcp'), { signal: controller.signal })).rejects.toThrow(/abort/i)
      expect(exchanges).toHaveLength(1)
    })
  })

  it('EGRESS_ALLOWED_HOSTS: host or host:port entries, written as URLs write hosts; a malformed entry is refused', () => {
    const env = { BACKEND_URL: 'http://localhost:3000', STATE_DIR: '' }
    expect(configFromEnv(env).egressAllowedHosts).toEqual([])
    expect(configFromEnv({ ...env, EGRESS_ALLOWED_HOSTS: ' MCP.Internal.example , 10.0.0.5:8443,127.1:80,[::0001]:3000,' }).egressAllowedHosts)
      .toEqual(['mcp.internal.example', '10.0.0.5:8443', '127.0.0.1:80', '[::1]:3000'])
    for (const bad of ['http://x.example', 'x.example/path', 'x.example:99999', 'user@x.example', '::1']) {
      expect(() => configFromEnv({ ...env, EGRESS_ALLOWED_HOSTS: bad }), bad).toThrow(ConfigError)
    }
  })
})
