import type { Database } from '../../src/db/types.js'
import { newId } from '../../src/db/ids.js'
import type { Account, Call } from './teams.js'

/** A server as the API answers it. */
export interface ServerBody {
  id: string
  name: string
  slug: string
  description: string
  long_description: string | null
  category_id: string | null
  tags: string[]
  language: string | null
  runtime: string | null
  transport_type: 'stdio' | 'http' | 'sse'
  status: 'active' | 'deprecated' | 'maintenance' | 'disabled'
  featured: boolean
  visibility: 'global' | 'team'
  owner_team_id: string | null
  repository_url: string | null
  website_url: string | null
  icon_url: string | null
  author_name: string | null
  organization: string | null
  license: string | null
  packages: Array<Record<string, unknown>>
  remotes: Array<{ type: string; url: string }>
  latest_version: string | null
  registry_name: string | null
  source: 'manual' | 'registry'
  created_by: string | null
  created_at: string
  updated_at: string
}

export interface CategoryBody {
  id: string
  name: string
  description: string | null
  icon: string | null
  sort_order: number
  server_count: number
  created_at: string
  updated_at: string
}

export interface VersionBody {
  id: string
  server_id: string
  version: string
  status: 'active' | 'deprecated' | 'yanked'
  changelog: string | null
  release_date: string | null
  packages: Array<Record<string, unknown>> | null
  remotes: Array<{ type: string; url: string }> | null
  is_latest: boolean
  created_at: string
  updated_at: string
}

/** POST /api/mcp/servers/global; fails loudly unless 201. */
export async function createServer(call: Call, admin: Account, body: Record<string, unknown>): Promise<ServerBody> {
  const response = await call('POST', '/api/mcp/servers/global', admin, body)
  if (response.statusCode !== 201) throw new Error(`server creation failed: ${response.statusCode} ${response.body}`)
  return response.json().data.server
}

/** POST /api/mcp/categories; fails loudly unless 201. */
export async function createCategory(call: Call, admin: Account, body: Record<string, unknown>): Promise<CategoryBody> {
  const response = await call('POST', '/api/mcp/categories', admin, body)
  if (response.statusCode !== 201) throw new Error(`category creation failed: ${response.statusCode} ${response.body}`)
  return response.json().data.category
}

/** POST /api/mcp/servers/:id/versions; fails loudly unless 201. */
export async function addVersion(call: Call, admin: Account, serverId: string, body: Record<string, unknown>): Promise<VersionBody> {
  const response = await call('POST', `/api/mcp/servers/${serverId}/versions`, admin, body)
  if (response.statusCode !== 201) throw new Error(`version creation failed: ${response.statusCode} ${response.body}`)
  return response.json().data.version
}

/**
 * A team-visible server, written straight to the database (the read tests' fixture; the API's
 * own route for it, POST /api/teams/:teamId/mcp/servers, is tested in team-servers.test.ts).
 */
export async function insertTeamServer(database: Database, teamId: string, name: string, extra: { description?: string; tags?: string[] } = {}): Promise<string> {
  const id = newId()
  const now = new Date()
  await database.db.insert(database.t.mcpServers).values({
    id, name, sortName: name.toLowerCase(), slug: `team-${id.slice(-12)}`, description: extra.description ?? '', longDescription: null,
    categoryId: null, tags: extra.tags ?? [], language: null, runtime: null, languageKey: null, runtimeKey: null, transportType: 'stdio', status: 'active', featured: false,
    visibility: 'team', ownerTeamId: teamId, repositoryUrl: null, websiteUrl: null, iconUrl: null, authorName: null, organization: null,
    license: null, packages: [], remotes: [], latestVersion: null, createdBy: null, createdAt: now, updatedAt: now,
  })
  if ((extra.tags ?? []).length > 0) {
    await database.db.insert(database.t.mcpServerTags).values((extra.tags ?? []).map((tag) => ({ serverId: id, tag })))
  }
  return id
}
