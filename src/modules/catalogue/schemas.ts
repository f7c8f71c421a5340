import { Type, type Static, type TSchema } from 'typebox'
import { Nullable, Ok, OkMessage, Pagination, PaginationQuery } from '../../http/envelope.js'
import { EnvironmentVariable, HttpUrl, Packages, Remotes, ServerRemote } from '../../formats/catalogue-entries.js'

const closed = { additionalProperties: false } as const
const Timestamp = Type.String({ format: 'date-time' })
const Id = Type.String({ minLength: 1, maxLength: 100 })

export const Done = OkMessage

// Categories

const CategoryName = Type.String({ minLength: 1, maxLength: 100, pattern: '\\S', description: 'Unique, compared case-insensitively.' })
const CategoryFields = {
  description: Type.Optional(Nullable(Type.String({ maxLength: 1000 }))),
  icon: Type.Optional(Nullable(Type.String({ maxLength: 100, description: 'An icon name or emoji for the frontend.' }))),
  sort_order: Type.Optional(Type.Integer({ minimum: -1_000_000, maximum: 1_000_000, description: 'Lower first; 0 when omitted.' })),
}

export const CategoryView = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Nullable(Type.String()),
  icon: Nullable(Type.String()),
  sort_order: Type.Integer(),
  server_count: Type.Integer({ description: 'Servers in the category that the caller can see.' }),
  created_at: Timestamp,
  updated_at: Timestamp,
}, {
  examples: [{
    id: '019a6e1c-8f2a-7c4e-9b1d-3f5a7c9e1b2d', name: 'Databases', description: 'Servers that query and administer databases.',
    icon: 'database', sort_order: 10, server_count: 12, created_at: '2026-11-01T09:30:00.000Z', updated_at: '2026-11-01T09:30:00.000Z',
  }],
})

export const CategoryParams = Type.Object({ id: Id }, closed)
export const CreateCategoryBody = Type.Object({ name: CategoryName, ...CategoryFields }, {
  ...closed,
  examples: [{ name: 'Databases', description: 'Servers that query and administer databases.', icon: 'database', sort_order: 10 }],
})
export const UpdateCategoryBody = Type.Object({ name: Type.Optional(CategoryName), ...CategoryFields }, { ...closed, minProperties: 1, examples: [{ sort_order: 5 }] })
export const CategoryEnvelope = Ok(Type.Object({ category: CategoryView }))
export const CategoriesEnvelope = Ok(Type.Object({ categories: Type.Array(CategoryView) }))

// Servers



const ServerStatus = Type.Union([Type.Literal('active'), Type.Literal('deprecated'), Type.Literal('maintenance'), Type.Literal('disabled')])
const TransportType = Type.Union([Type.Literal('stdio'), Type.Literal('http'), Type.Literal('sse')])
const Slug = Type.String({ minLength: 1, maxLength: 100, pattern: '^[a-z0-9]+(-[a-z0-9]+)*$' })
const ShortText = (maxLength: number) => Type.String({ maxLength })
const Tag = Type.String({ minLength: 1, maxLength: 50, description: 'Trimmed and lowercased; 1–50 characters.' })

const ServerFields = {
  description: Type.Optional(Type.String({ maxLength: 1000, description: 'Up to 1 000 characters; empty when omitted.' })),
  long_description: Type.Optional(Nullable(Type.String({ maxLength: 50_000, description: 'Up to 50 000 characters (Markdown).' }))),
  category_id: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 100, description: 'An existing category (400 otherwise); null for none.' }))),
  tags: Type.Optional(Type.Array(Tag, { maxItems: 20, description: 'At most 20; normalized (trimmed, lowercased, duplicates dropped).' })),
  language: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 50, description: 'e.g. TypeScript, Python.' }))),
  runtime: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 50, description: 'e.g. node, python, docker.' }))),
  transport_type: Type.Optional(TransportType),
  status: Type.Optional(ServerStatus),
  featured: Type.Optional(Type.Boolean()),
  repository_url: Type.Optional(Nullable(HttpUrl)),
  website_url: Type.Optional(Nullable(HttpUrl)),
  icon_url: Type.Optional(Nullable(HttpUrl)),
  author_name: Type.Optional(Nullable(ShortText(255))),
  organization: Type.Optional(Nullable(ShortText(255))),
  license: Type.Optional(Nullable(ShortText(100))),
  packages: Type.Optional(Packages),
  remotes: Type.Optional(Remotes),
}

const ServerName = Type.String({ minLength: 1, maxLength: 255, pattern: '\\S' })

const serverExample = {
  name: 'PostgreSQL MCP Server',
  description: 'Read-only SQL access to a PostgreSQL database, with schema inspection.',
  category_id: null,
  tags: ['database', 'sql', 'postgres'],
  language: 'TypeScript',
  runtime: 'node',
  transport_type: 'stdio',
  repository_url: 'https://github.com/example/postgres-mcp',
  license: 'MIT',
  packages: [{
    registry_type: 'npm',
    identifier: '@example/postgres-mcp',
    version: '1.4.0',
    runtime_args: ['-y'],
    environment_variables: [{ name: 'DATABASE_URL', description: 'Connection string', required: true, secret: true }],
  }],
  remotes: [],
}

export const CreateServerBody = Type.Object({
  name: ServerName,
  slug: Type.Optional(Slug),
  ...ServerFields,
}, { ...closed, examples: [serverExample] })

export const UpdateServerBody = Type.Object({
  name: Type.Optional(ServerName),
  slug: Type.Optional(Slug),
  ...ServerFields,
}, { ...closed, minProperties: 1, examples: [{ status: 'deprecated', featured: false }] })

/** A package as answered: the request's per-type rules were checked on the way in. */
const PackageView = Type.Object({
  registry_type: Type.Union([
    Type.Literal('npm'), Type.Literal('pypi'), Type.Literal('docker'), Type.Literal('oci'), Type.Literal('nuget'), Type.Literal('mcpb'),
  ]),
  identifier: Type.String(),
  version: Type.Optional(Type.String()),
  runtime_args: Type.Optional(Type.Array(Type.String())),
  environment_variables: Type.Optional(Type.Array(EnvironmentVariable)),
})

export const ServerView = Type.Object({
  id: Type.String(),
  name: Type.String(),
  slug: Type.String(),
  description: Type.String(),
  long_description: Nullable(Type.String()),
  category_id: Nullable(Type.String()),
  tags: Type.Array(Type.String()),
  language: Nullable(Type.String()),
  runtime: Nullable(Type.String()),
  transport_type: TransportType,
  status: ServerStatus,
  featured: Type.Boolean(),
  visibility: Type.Union([Type.Literal('global'), Type.Literal('team')]),
  owner_team_id: Nullable(Type.String()),
  repository_url: Nullable(Type.String()),
  website_url: Nullable(Type.String()),
  icon_url: Nullable(Type.String()),
  author_name: Nullable(Type.String()),
  organization: Nullable(Type.String()),
  license: Nullable(Type.String()),
  packages: Type.Array(PackageView),
  remotes: Type.Array(ServerRemote),
  latest_version: Nullable(Type.String({ description: 'The version marked is_latest; null while no version is active.' })),
  registry_name: Nullable(Type.String({ description: 'The server\'s name in the MCP Registry (`namespace/name`), for servers imported from one; null for servers created here.' })),
  source: Type.Union([Type.Literal('manual'), Type.Literal('registry')], { description: '`manual`: created through this API; `registry`: imported or synced from an MCP Registry.' }),
  created_by: Nullable(Type.String()),
  created_at: Timestamp,
  updated_at: Timestamp,
}, {
  examples: [{
    ...serverExample,
    id: '019a6e1d-02b4-7a11-8c3e-5d7f9a1b3c5e', slug: 'postgresql-mcp-server', long_description: null, status: 'active', featured: true,
    visibility: 'global', owner_team_id: null, website_url: null, icon_url: null, author_name: 'Example Labs', organization: 'example',
    latest_version: '1.4.0', registry_name: null, source: 'manual', created_by: '019a6e1a-77c0-7d2e-a4f6-0b2d4f6a8c0e', created_at: '2026-11-02T10:00:00.000Z', updated_at: '2026-11-20T16:45:00.000Z',
  }],
})

const ServerKey = Type.String({ minLength: 1, maxLength: 100, description: 'The id or the slug.' })
const TeamId = Type.String({ minLength: 1, maxLength: 100, description: 'The team that owns the server.' })

export const ServerParams = Type.Object({ id: ServerKey }, closed)
export const TeamParams = Type.Object({ teamId: TeamId }, closed)
export const TeamServerParams = Type.Object({ teamId: TeamId, id: ServerKey }, closed)
export const ServerEnvelope = Ok(Type.Object({ server: ServerView }))
export const ServerPage = Ok(Type.Object({ servers: Type.Array(ServerView), pagination: Pagination }))

const ListFilters = {
  category_id: Type.Optional(Id),
  status: Type.Optional(ServerStatus),
  transport_type: Type.Optional(TransportType),
  language: Type.Optional(Type.String({ minLength: 1, maxLength: 50, description: 'Case-insensitive.' })),
  runtime: Type.Optional(Type.String({ minLength: 1, maxLength: 50, description: 'Case-insensitive.' })),
  featured: Type.Optional(Type.Boolean()),
  tag: Type.Optional(Type.String({ minLength: 1, maxLength: 50, description: 'Servers carrying this tag (case-insensitive).' })),
  installable: Type.Optional(Type.Boolean({
    description: '`true`: servers whose latest version has a package of a registry type satellites run (npm, pypi, oci, docker) or a remote; `false`: the others.',
  })),
}

export const ServerListQuery = Type.Object({
  ...PaginationQuery,
  ...ListFilters,
  sort: Type.Optional(Type.Union([Type.Literal('name'), Type.Literal('-created_at'), Type.Literal('-updated_at')], { description: 'name (default, A→Z), -created_at or -updated_at (newest first); ties by id.' })),
}, closed)

export const ServerSearchQuery = Type.Object({
  q: Type.String({ minLength: 1, maxLength: 200, description: 'Plain words; each must match the start of a word of the server. Search syntax characters only separate words.', examples: ['postg', 'github issues'] }),
  ...PaginationQuery,
  ...ListFilters,
}, closed)

// Versions

const VersionStatus = Type.Union([Type.Literal('active'), Type.Literal('deprecated'), Type.Literal('yanked')])
const Changelog = Type.String({ maxLength: 50_000 })

export const VersionView = Type.Object({
  id: Type.String(),
  server_id: Type.String(),
  version: Type.String(),
  status: VersionStatus,
  changelog: Nullable(Type.String()),
  release_date: Nullable(Timestamp),
  packages: Type.Union([Type.Array(PackageView), Type.Null()]),
  remotes: Type.Union([Type.Array(ServerRemote), Type.Null()]),
  is_latest: Type.Boolean({ description: 'The highest active release (or, with none, the highest active pre-release).' }),
  created_at: Timestamp,
  updated_at: Timestamp,
}, {
  examples: [{
    id: '019a6e20-4c1d-7f3a-9e2b-6a8c0e2f4a6c', server_id: '019a6e1d-02b4-7a11-8c3e-5d7f9a1b3c5e', version: '1.4.0', status: 'active',
    changelog: 'Adds schema inspection.', release_date: '2026-11-01T00:00:00.000Z', packages: null, remotes: null, is_latest: true,
    created_at: '2026-11-20T16:45:00.000Z', updated_at: '2026-11-20T16:45:00.000Z',
  }],
})

const VersionServerKey = Type.String({ minLength: 1, maxLength: 100, description: 'The server id or slug.' })
export const VersionParams = Type.Object({ id: VersionServerKey, versionId: Id }, closed)
export const TeamVersionParams = Type.Object({ teamId: TeamId, id: VersionServerKey, versionId: Id }, closed)
export const VersionListQuery = Type.Object({ ...PaginationQuery }, closed)

export const CreateVersionBody = Type.Object({
  version: Type.String({ minLength: 1, maxLength: 128, description: 'Semantic version 2.0, e.g. 1.4.0 or 2.0.0-rc.1 (no leading v).' }),
  status: Type.Optional(Type.Union([Type.Literal('active'), Type.Literal('deprecated')], { description: 'active when omitted.' })),
  changelog: Type.Optional(Nullable(Changelog)),
  release_date: Type.Optional(Nullable(Timestamp)),
  packages: Type.Optional(Type.Union([Packages, Type.Null()])),
  remotes: Type.Optional(Type.Union([Remotes, Type.Null()])),
}, { ...closed, examples: [{ version: '1.4.0', changelog: 'Adds schema inspection.', release_date: '2026-11-01T00:00:00Z' }] })

export const UpdateVersionBody = Type.Object({
  version: Type.Optional(Type.String({ maxLength: 128, description: 'Immutable: accepted only when equal to the current version.' })),
  status: Type.Optional(VersionStatus),
  changelog: Type.Optional(Nullable(Changelog)),
  release_date: Type.Optional(Nullable(Timestamp)),
}, { ...closed, minProperties: 1, examples: [{ status: 'deprecated' }] })

export const VersionEnvelope = Ok(Type.Object({ version: VersionView }))
export const VersionPage = Ok(Type.Object({ versions: Type.Array(VersionView), pagination: Pagination }))
