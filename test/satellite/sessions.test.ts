import { spawn, type ChildProcess } from 'node:child_process'
import { request as httpRequest } from 'node:http'
import { createServer } from 'node:net'
import { createRequire } from 'node:module'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import {
  CallToolResultSchema,
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
  ResourceListChangedNotificationSchema,
  type LoggingMessageNotification,
} from '@modelcontextprotocol/sdk/types.js'
import { EventSourceParserStream } from 'eventsource-parser/stream'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { UNRESTRICTED } from '../../examples/satellite/src/egress.js'
import { Front } from '../../examples/satellite/src/front.js'
import { ManagedInstance } from '../../examples/satellite/src/instance.js'
import { Isolation } from '../../examples/satellite/src/isolation.js'
import { silentLogger } from '../../examples/satellite/src/logger.js'
import { SatelliteKeys } from '../../examples/satellite/src/sealing.js'
import { TokenChecker } from '../../examples/satellite/src/tokens.js'
import type { Instance, TokenClaims } from '../../examples/satellite/src/types.js'
import { alive, descendants, everythingInstance, recordingHooks, waitFor } from './support.js'

/**
 * The whole MCP protocol through the satellite, for a package (stdio, sandboxed) and a remote
 * server (server-everything over streamable HTTP on loopback): each client session has its own
 * upstream session, so what one session does (a session resource, its list change, its log
 * level) never reaches another; server-to-client requests (sampling, elicitation, roots) reach
 * the client that caused them; progress arrives complete and before the result; a stream cut
 * short resumes with Last-Event-ID; sessions are bounded in number and idle time; a loopback
 * satellite answers only to loopback host names. Tokens come from a table instead of the
 * backend (the end-to-end tests use the backend).
 */
afterAll(async () => (await Isolation.default()).close())

const require = createRequire(import.meta.url)
const EVERYTHING_MAIN = require.resolve('@modelcontextprotocol/server-everything/dist/index.js')
const GZIP_DATA = `data:text/plain;base64,${Buffer.from('a session of its own').toString('base64')}`

async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

describe('reference satellite: MCP sessions', () => {
  let keys: SatelliteKeys
  let front: Front
  let base: string
  let remoteServer: ChildProcess
  const placed: ManagedInstance[] = []
  const claimsOf = new Map<string, TokenClaims>()
  const clients: Client[] = []
  const packaged = everythingInstance({ team_id: 'team-a' })
  let remote: Instance

  const token = (): string => {
    const value = `tok_${Math.random().toString(36).slice(2)}`
    claimsOf.set(value, { active: true, token_type: 'Bearer', scope: 'mcp:read', aud: `${base}/mcp`, team_id: 'team-a', sub: 'alice', exp: Math.floor(Date.now() / 1000) + 3600 })
    return value
  }
  const bearer = { authorization: '' }

  const connect = async (installationId: string, capabilities: Record<string, object> = {}): Promise<Client> => {
    const client = new Client({ name: 'sessions-test', version: '1.0.0' }, { capabilities })
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp/${installationId}`), { requestInit: { headers: bearer } }))
    clients.push(client)
    return client
  }

  const instanceOf = (spec: Instance): ManagedInstance => placed.find((instance) => instance.spec.installation_id === spec.installation_id)!

  beforeAll(async () => {
    keys = await SatelliteKeys.generate()
    const tokens = new TokenChecker(async (value) => claimsOf.get(value) ?? { active: false })
    front = new Front({
      backendUrl: 'http://127.0.0.1:9', tokens, log: silentLogger,
      instancesOf: (id) => placed.filter((instance) => instance.spec.installation_id === id),
      sessions: { idleMs: 60_000, perInstance: 6 },
    })
    base = `http://127.0.0.1:${await front.listen('127.0.0.1', 0)}`
    front.setBaseUrl(base)
    bearer.authorization = `Bearer ${token()}`

    const port = await freePort()
    remoteServer = spawn(process.execPath, [EVERYTHING_MAIN, 'streamableHttp'], { env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'] })
    await new Promise<void>((resolve, reject) => {
      remoteServer.stderr!.on('data', (chunk: Buffer) => chunk.toString().includes('listening') && resolve())
      remoteServer.once('exit', (code) => reject(new Error(`server-everything exited with ${code}`)))
    })
    remote = { ...everythingInstance({ team_id: 'team-a' }), launch: { kind: 'remote', url: `http://127.0.0.1:${port}/mcp`, transport: 'streamable-http', headers: {} } }
    for (const spec of [packaged, remote]) {
      const instance = new ManagedInstance(spec, { keys, packageDirs: [process.cwd()], startTimeoutMs: 15_000, hooks: recordingHooks().hooks, egress: UNRESTRICTED })
      instance.update(spec)
      placed.push(instance)
    }
    await waitFor(() => placed.every((instance) => instance.phase === 'running'), 'both instances running', 20_000)
  }, 60_000)

  // Each test's sessions end with it (each holds a process or a remote session).
  afterEach(async () => {
    await Promise.all(clients.splice(0).map(async (client) => {
      await (client.transport as StreamableHTTPClientTransport | undefined)?.terminateSession().catch(() => undefined)
      await client.close().catch(() => undefined)
    }))
  })

  afterAll(async () => {
    await front?.close()
    await Promise.all(placed.map((instance) => instance.remove()))
    remoteServer?.kill()
  })

  describe.each([['package (stdio)', () => packaged], ['remote (streamable HTTP)', () => remote]])('%s', (_kind, spec) => {
    it("keeps each session's state to itself: a session resource and its list change reach only the session that made it", async () => {
      const [a, b] = [await connect(spec().installation_id), await connect(spec().installation_id)]
      const changed = { a: 0, b: 0 }
      a.setNotificationHandler(ResourceListChangedNotificationSchema, () => void (changed.a += 1))
      b.setNotificationHandler(ResourceListChangedNotificationSchema, () => void (changed.b += 1))
      const made = await a.callTool({ name: 'gzip-file-as-resource', arguments: { name: 'mine.txt.gz', data: GZIP_DATA, outputType: 'resourceLink' } })
      const link = (made.content as Array<{ type: string; uri?: string }>).find((part) => part.type === 'resource_link')
      expect(link?.uri, JSON.stringify(made)).toMatch(/mine\.txt\.gz/)

      await waitFor(() => changed.a > 0, 'the list change in the session that made the resource')
      expect((await a.listResources()).resources.map((resource) => resource.uri)).toContain(link!.uri)
      expect((await b.listResources()).resources.map((resource) => resource.uri)).not.toContain(link!.uri)
      await expect(b.readResource({ uri: link!.uri! })).rejects.toThrow()
      // Given time to arrive, the other session's change never does.
      await new Promise((resolve) => setTimeout(resolve, 300))
      expect(changed.b).toBe(0)
    })

    it('passes sampling, elicitation and roots requests to the client whose call caused them', async () => {
      const asked: string[] = []
      const client = await connect(spec().installation_id, { sampling: {}, elicitation: {}, roots: { listChanged: true } })
      const bystander = await connect(spec().installation_id, { sampling: {}, elicitation: {}, roots: {} })
      bystander.setRequestHandler(CreateMessageRequestSchema, () => { throw new Error('the bystander was asked') })
      client.setRequestHandler(CreateMessageRequestSchema, (request) => {
        asked.push('sampling')
        const first = request.params.messages[0]!.content as { text?: string }
        return { role: 'assistant', model: 'test-model', content: { type: 'text', text: `echo of ${first.text ?? ''}` } }
      })
      client.setRequestHandler(ElicitRequestSchema, () => {
        asked.push('elicitation')
        return { action: 'accept', content: { name: 'Ada Lovelace' } }
      })
      client.setRequestHandler(ListRootsRequestSchema, () => {
        asked.push('roots')
        return { roots: [{ uri: 'file:///work/project-of-this-session', name: 'this session' }] }
      })

      const sampled = await client.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'a question', maxTokens: 20 } })
      expect(JSON.stringify(sampled.content)).toContain('echo of')
      const elicited = await client.callTool({ name: 'trigger-elicitation-request', arguments: {} })
      expect(JSON.stringify(elicited.content)).toContain('Ada Lovelace')
      const roots = await client.callTool({ name: 'get-roots-list', arguments: {} })
      expect(JSON.stringify(roots.content)).toContain('project-of-this-session')
      expect(asked).toEqual(expect.arrayContaining(['sampling', 'elicitation', 'roots']))
    })

    it('delivers every progress notification before the result, call after call', async () => {
      const client = await connect(spec().installation_id)
      for (let round = 0; round < 5; round += 1) {
        const seen: number[] = []
        const result = await client.request(
          { method: 'tools/call', params: { name: 'trigger-long-running-operation', arguments: { duration: 0.2, steps: 5 } } },
          CallToolResultSchema,
          { onprogress: (progress) => seen.push(progress.progress) },
        )
        expect(result.content.length).toBeGreaterThan(0)
        expect(seen).toEqual([1, 2, 3, 4, 5])
      }
    })

    it("sets the log level per session: one session's level leaves another's messages alone", async () => {
      const [quiet, chatty] = [await connect(spec().installation_id), await connect(spec().installation_id)]
      const heard: { quiet: LoggingMessageNotification[]; chatty: LoggingMessageNotification[] } = { quiet: [], chatty: [] }
      quiet.setNotificationHandler(LoggingMessageNotificationSchema, (note) => void heard.quiet.push(note))
      chatty.setNotificationHandler(LoggingMessageNotificationSchema, (note) => void heard.chatty.push(note))
      await quiet.setLoggingLevel('emergency')
      await chatty.setLoggingLevel('debug')
      for (const client of [quiet, chatty]) await client.callTool({ name: 'toggle-simulated-logging', arguments: {} })
      await waitFor(() => heard.chatty.length >= 1, 'a log message in the chatty session (sent every 5 s)', 15_000)
      expect(heard.quiet.filter((note) => note.params.level !== 'emergency')).toEqual([])
      for (const client of [quiet, chatty]) await client.callTool({ name: 'toggle-simulated-logging', arguments: {} })
    })
  })

  it('gives each session of a package its own process, and ends it with the session', async () => {
    const instance = instanceOf(packaged)
    const satellitePid = process.pid
    const before = new Set(descendants(satellitePid))
    const client = await connect(packaged.installation_id)
    const started = await waitFor(() => {
      const fresh = descendants(satellitePid).filter((pid) => !before.has(pid))
      return fresh.length > 0 && fresh
    }, 'a process for the new session')
    expect(instance.phase).toBe('running')
    await (client.transport as StreamableHTTPClientTransport).terminateSession()
    await client.close()
    await waitFor(() => started.every((pid) => !alive(pid)), 'the session process to end')
  })

  it("answers a call in progress when the session's process dies, and the next session gets a new one", async () => {
    const before = new Set(descendants(process.pid))
    const client = await connect(packaged.installation_id)
    const own = descendants(process.pid).filter((pid) => !before.has(pid))
    expect(own.length).toBeGreaterThan(0)
    const call = client.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 5, steps: 5 } })
    await new Promise((resolve) => setTimeout(resolve, 300))
    for (const pid of own) {
      try {
        process.kill(pid, 'SIGKILL')
      } catch {
        // gone already
      }
    }
    await expect(call).rejects.toThrow(/The server ended the session/)
    expect(instanceOf(packaged).phase).toBe('running')
    const next = await connect(packaged.installation_id)
    expect((await next.listTools()).tools.length).toBeGreaterThan(0)
  })

  it('resumes a stream cut short: Last-Event-ID brings the rest of the progress and the result', async () => {
    const endpoint = `${base}/mcp/${packaged.installation_id}`
    const headers = { ...bearer, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' }
    const opened = await fetch(endpoint, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }) })
    const session = opened.headers.get('mcp-session-id')!
    await opened.body?.cancel()
    const inSession = { ...headers, 'mcp-session-id': session }
    await fetch(endpoint, { method: 'POST', headers: inSession, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })

    const abort = new AbortController()
    const call = await fetch(endpoint, {
      method: 'POST', headers: inSession, signal: abort.signal,
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'trigger-long-running-operation', arguments: { duration: 1.5, steps: 5 }, _meta: { progressToken: 'p1' } } }),
    })
    expect(call.headers.get('content-type')).toContain('text/event-stream')
    const first = call.body!.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream()).getReader()
    let lastId: string | undefined
    const before: unknown[] = []
    while (before.length < 2) {
      const { value } = await first.read()
      if (value?.id !== undefined) lastId = value.id
      if (value?.data) before.push(JSON.parse(value.data))
    }
    abort.abort()

    // As a client does after the stream's `retry`: until the satellite has seen the old stream go, it answers 409.
    const resumed = await waitFor(async () => {
      const answer = await fetch(endpoint, { method: 'GET', headers: { ...inSession, accept: 'text/event-stream', 'last-event-id': lastId! } })
      if (answer.status === 409) await answer.body?.cancel()
      return answer.status !== 409 && answer
    }, 'the resumed stream')
    expect(resumed.status).toBe(200)
    const rest = resumed.body!.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream()).getReader()
    const after: Array<{ id?: number; method?: string; params?: { progress?: number } }> = []
    while (!after.some((message) => message.id === 2)) {
      const { value, done } = await rest.read()
      if (done) break
      if (value?.data) after.push(JSON.parse(value.data))
    }
    await rest.cancel()
    const progress = [...before, ...after].filter((message) => (message as { method?: string }).method === 'notifications/progress').map((message) => (message as { params: { progress: number } }).params.progress)
    expect(progress).toEqual([1, 2, 3, 4, 5])
    expect(after.at(-1)).toMatchObject({ id: 2, result: { content: expect.any(Array) } })

    // An id the session never gave is refused rather than answered with nothing.
    const unknown = await fetch(endpoint, { method: 'GET', headers: { ...inSession, accept: 'text/event-stream', 'last-event-id': 'no-such-event' } })
    expect(unknown.status).toBe(400)
    await fetch(endpoint, { method: 'DELETE', headers: inSession })
  })

  it('serves at most the configured number of sessions per instance, and a closed one frees its place', async () => {
    const open: Client[] = []
    const refusedStatus = async (): Promise<number> => {
      const response = await fetch(`${base}/mcp/${remote.installation_id}`, {
        method: 'POST', headers: { ...bearer, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'over', version: '1' } } }),
      })
      expect(response.status === 200 || response.headers.get('retry-after') === '30').toBe(true)
      if (response.status === 200) {
        const id = response.headers.get('mcp-session-id')!
        await fetch(`${base}/mcp/${remote.installation_id}`, { method: 'DELETE', headers: { ...bearer, 'mcp-session-id': id } })
      }
      return response.status
    }
    for (let index = 0; index < 6; index += 1) open.push(await connect(remote.installation_id))
    expect(await refusedStatus()).toBe(503)
    await (open[0]!.transport as StreamableHTTPClientTransport).terminateSession()
    await open[0]!.close()
    await waitFor(async () => (await refusedStatus()) === 200, 'a place freed by the closed session')
  })

  it('answers only to loopback host names when reached on loopback (DNS rebinding)', async () => {
    const statusWithHost = (host: string) => new Promise<number>((resolve, reject) => {
      const request = httpRequest(`${base}/mcp/${packaged.installation_id}`, {
        method: 'POST', headers: { host, origin: `http://${host}`, ...bearer, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      }, (response) => {
        response.resume()
        resolve(response.statusCode!)
      })
      request.once('error', reject)
      request.end(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }))
    })
    expect(await statusWithHost('evil.example.com')).toBe(403)
    expect(await statusWithHost(`localhost:${new URL(base).port}`)).toBe(400)
  })

  it('ends a session nobody used for the idle bound, and its process with it', async () => {
    const tokens = new TokenChecker(async (value) => claimsOf.get(value) ?? { active: false })
    const brief = new Front({ backendUrl: 'http://127.0.0.1:9', tokens, log: silentLogger, instancesOf: (id) => placed.filter((instance) => instance.spec.installation_id === id), sessions: { idleMs: 1500, perInstance: 2 } })
    const briefBase = `http://127.0.0.1:${await brief.listen('127.0.0.1', 0)}`
    brief.setBaseUrl(briefBase)
    const own = `tok_${Math.random().toString(36).slice(2)}`
    claimsOf.set(own, { ...claimsOf.get(bearer.authorization.slice(7))!, aud: `${briefBase}/mcp` })
    const briefBearer = { authorization: `Bearer ${own}` }
    try {
      const before = new Set(descendants(process.pid))
      const client = new Client({ name: 'idle', version: '1.0.0' })
      const transport = new StreamableHTTPClientTransport(new URL(`${briefBase}/mcp/${packaged.installation_id}`), { requestInit: { headers: briefBearer } })
      await client.connect(transport)
      expect((await client.listTools()).tools.length).toBeGreaterThan(0)
      const started = descendants(process.pid).filter((pid) => !before.has(pid))
      expect(started.length).toBeGreaterThan(0)
      // The SDK client keeps a GET stream open, which counts as use: the idle bound is for sessions without one.
      await transport.close()
      await waitFor(() => started.every((pid) => !alive(pid)), 'the idle session and its process to end', 10_000)
      const gone = await fetch(`${briefBase}/mcp/${packaged.installation_id}`, {
        method: 'POST', headers: { ...briefBearer, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': transport.sessionId!, 'mcp-protocol-version': '2025-11-25' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'ping' }),
      })
      expect(gone.status).toBe(404)
    } finally {
      await brief.close()
    }
  })
})
