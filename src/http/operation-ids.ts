import type { FastifyInstance } from 'fastify'

/**
 * An OpenAPI `operationId` for every documented route, so that client generators name their
 * functions after it. A route may give its own (`schema.operationId`); otherwise it is made from
 * the method and the path: GET of a paginated list → `list…`, else the method's name, then the
 * path's words without `/api`, a path parameter as `By<Name>`:
 * `GET /api/users/me` → `getUsersMe`, `GET /api/mcp/servers` → `listMcpServers`,
 * `DELETE /api/teams/:id/members/:userId` → `deleteTeamsByIdMembersByUserId`.
 * An extension plugin's ids start with its id (`notesListNotes`), also the ones it gives itself.
 * Two routes with one id fail the boot (a plugin's: that plugin), naming both.
 */
export function installOperationIds(app: FastifyInstance): void {
  const taken = new Map<string, string>()
  app.addHook('onRoute', (route) => {
    const schema = (route.schema ?? {}) as Record<string, unknown>
    // HEAD routes (made for every GET) and hidden ones are not in the document.
    if (schema.hide === true || route.method === 'HEAD') return
    const name = `${String(route.method)} ${route.url}`
    const methods = (Array.isArray(route.method) ? route.method : [route.method]).filter((method) => method !== 'HEAD')
    if (methods.length !== 1) throw new Error(`Route ${name}: register one route per method, so that each gets its own operationId`)
    const plugin = route.config?.plugin
    const explicit = typeof schema.operationId === 'string' ? schema.operationId : undefined
    const path = plugin === undefined ? route.url.replace(/^\/api(?=\/|$)/, '') : route.url.slice(plugin.prefix.length)
    const own = explicit ?? derived(methods[0]!, path, schema.querystring)
    const id = plugin === undefined ? own : `${camel(plugin.id)}${upperFirst(own)}`
    const holder = taken.get(id)
    if (holder !== undefined) throw new Error(`Route ${name}: operationId ${id} is already ${holder}'s; give one of them its own schema.operationId`)
    taken.set(id, name)
    // A copy: routes may share one schema object (an alias path), each needs its own id.
    route.schema = { ...schema, operationId: id }
  })
}

function derived(method: string, path: string, querystring: unknown): string {
  const paginated = (querystring as { properties?: Record<string, unknown> } | undefined)?.properties?.limit !== undefined
  const verb = method === 'GET' && paginated ? 'list' : method.toLowerCase()
  return `${verb}${upperFirst(camel(path))}`
}

/** `/mcp/servers/:id/versions` → `mcpServersByIdVersions`; a wildcard becomes `Any`. */
function camel(path: string): string {
  const words = path.split('/').filter(Boolean).flatMap((segment) => {
    if (segment.startsWith(':')) return ['by', ...wordsOf(segment.slice(1).replace(/\(.*$/, ''))]
    if (segment === '*') return ['any']
    return wordsOf(segment)
  })
  return words.map((word, index) => (index === 0 ? lowerFirst(word) : upperFirst(word))).join('')
}

/** `oauth-authorization-server` → oauth, authorization, server; `teamId` stays one word. */
const wordsOf = (text: string): string[] => text.split(/[^A-Za-z0-9]+/).filter(Boolean)

const upperFirst = (text: string): string => text.charAt(0).toUpperCase() + text.slice(1)
const lowerFirst = (text: string): string => text.charAt(0).toLowerCase() + text.slice(1)
