/**
 * Pieces of the connection tests: a small protected resource on loopback (it answers an MCP
 * `initialize` without a token with 401 and a Bearer challenge naming its RFC 9728 document, which
 * names the real authorization server of test/helpers/upstream-oauth.ts), the app listening on a
 * real port with both hosts in OUTBOUND_ALLOWED_HOSTS, and the calls the flow makes.
 */
import { createServer as createHttpServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { expect } from 'vitest'
import type { TestContext } from './app.js'
import { freePort } from './oauth-e2e.js'
import { addVersion, createServer } from './catalogue.js'
import type { Account, Call } from './teams.js'
import { authorize, type Authorization } from './upstream-oauth.js'

export interface ResourceServer {
  /** `http://127.0.0.1:<port>/mcp`: the protected MCP endpoint (the resource). */
  url: string
  /** `http://127.0.0.1:<port>/open`: an endpoint that asks for no token. */
  openUrl: string
  host: string
  close(): Promise<void>
}

/** A resource whose metadata names `issuer` as its authorization server. */
export async function startResourceServer(issuer: string, scopes: string[] = ['mcp:tools']): Promise<ResourceServer> {
  const server: Server = createHttpServer((request, response) => {
    const base = `http://${request.headers.host}`
    if (request.url === '/.well-known/oauth-protected-resource/mcp') {
      response.writeHead(200, { 'content-type': 'application/json' })
      response.end(JSON.stringify({ resource: `${base}/mcp`, authorization_servers: [issuer], scopes_supported: scopes, bearer_methods_supported: ['header'] }))
      return
    }
    if (request.url === '/mcp') {
      response.writeHead(401, { 'www-authenticate': `Bearer resource_metadata="${base}/.well-known/oauth-protected-resource/mcp", scope="${scopes.join(' ')}"` })
      response.end()
      return
    }
    if (request.url === '/open') {
      response.writeHead(200, { 'content-type': 'application/json' })
      response.end(JSON.stringify({ jsonrpc: '2.0', id: 1, result: {} }))
      return
    }
    response.writeHead(404).end()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  const base = `http://127.0.0.1:${port}`
  return { url: `${base}/mcp`, openUrl: `${base}/open`, host: `127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(() => resolve())) }
}

/** An app listening on 127.0.0.1; PUBLIC_URL is its own address unless given (the callback then must be mapped back). */
export async function listeningApp(ctx: TestContext, env: Record<string, string>, publicUrl?: string): Promise<{ app: FastifyInstance; base: string }> {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const { app } = await ctx.build({ env: { PUBLIC_URL: publicUrl ?? base, RATE_LIMIT_ENABLED: 'false', ...env } })
  await app.listen({ host: '127.0.0.1', port })
  return { app, base }
}

export const connectionsOf = (teamId: string, id: string) => `/api/teams/${teamId}/mcp/installations/${id}/connections`

/** POST …/connections as `account`; the authorization URL, or the test fails. */
export async function startConnect(app: FastifyInstance, teamId: string, id: string, account: Account, body: Record<string, unknown> = {}): Promise<string> {
  const response = await app.inject({ method: 'POST', url: connectionsOf(teamId, id), headers: { cookie: account.cookie }, payload: body })
  expect(response.statusCode, response.body).toBe(200)
  return response.json().data.authorization_url as string
}

/** The callback as the browser of `account` loads it (a page). */
export function callback(app: FastifyInstance, url: string, account: Account): Promise<LightMyRequestResponse> {
  const { pathname, search } = new URL(url)
  return app.inject({ method: 'GET', url: `${pathname}${search}`, headers: { cookie: account.cookie, accept: 'text/html' } })
}

/** Start, sign in at the authorization server as `login`, and come back: the callback's answer. */
export async function connect(app: FastifyInstance, teamId: string, id: string, account: Account, login: string, body: Record<string, unknown> = {}): Promise<{ page: LightMyRequestResponse; authorization: Authorization }> {
  const authorization = await authorize(await startConnect(app, teamId, id, account, body), { account: login })
  return { page: await callback(app, authorization.callback, account), authorization }
}

/** A global catalogue server with one remote at `url` (and `auth` on it when given), at version 1.0.0; its id. */
export async function remoteServer(call: Call, admin: Account, name: string, url: string, auth?: 'oauth'): Promise<string> {
  const server = await createServer(call, admin, { name, remotes: [{ type: 'streamable-http', url, ...(auth === undefined ? {} : { auth }) }] })
  await addVersion(call, admin, server.id, { version: '1.0.0' })
  return server.id
}
