import { describe, expect, it } from 'vitest'
import type { ServerRow } from '../../src/db/repositories/server-filters.js'
import type { VersionRow } from '../../src/db/repositories/server-versions.js'
import type { ServerPackage, ServerRemote } from '../../src/formats/catalogue-entries.js'
import { documentsOf, OFFICIAL_META, readServerJson, SERVER_SCHEMA_URL, type ReadDocument, type ServerJson } from '../../src/modules/registry/server-json.js'
import { catalogueEntryOf, type CatalogueEntry } from '../../src/modules/registry/server-json-catalogue.js'
import { exportDocument, itemMeta, namespaceOf, registryNameOf } from '../../src/modules/registry/server-json-export.js'
import { OFFICIAL_SCHEMA_TEXT, officialProblems } from './official-schema.js'

/**
 * Reading, mapping and writing `server.json` (revision 2025-12-11), without a database: documents
 * of every package type, the two older shapes, what is refused and where, and the exported
 * document, which the MCP Registry's own published schema (a fixture) must accept.
 */

type Json = Record<string, unknown>

const NS = 'io.github.northwind'

/** An npm package with arguments (named and positional, with variables) and environment variables. */
const filesystemDocument = (): Json => ({
  $schema: SERVER_SCHEMA_URL,
  name: `${NS}/filesystem`,
  title: 'Northwind Filesystem',
  description: 'Read, write and search files under the directories you allow.',
  version: '1.4.2',
  websiteUrl: 'https://northwind.example/mcp/filesystem',
  repository: { url: 'https://github.com/northwind/mcp-filesystem', source: 'github', id: '81723344', subfolder: 'packages/server' },
  icons: [{ src: 'https://northwind.example/icons/fs.png', mimeType: 'image/png', sizes: ['48x48'] }],
  packages: [{
    registryType: 'npm',
    registryBaseUrl: 'https://registry.npmjs.org',
    identifier: '@northwind/mcp-filesystem',
    version: '1.4.2',
    runtimeHint: 'npx',
    transport: { type: 'stdio' },
    runtimeArguments: [
      { type: 'named', name: '--registry', value: 'https://npm.northwind.example' },
      { type: 'positional', value: '-y' },
      { type: 'positional', valueHint: 'workspace', description: 'Extra workspace package' },
    ],
    packageArguments: [
      { type: 'positional', valueHint: 'allowed_dir', description: 'A directory the server may use', isRequired: true, isRepeated: true, format: 'filepath' },
      { type: 'named', name: '--mode', value: '{mode}', variables: { mode: { choices: ['read-only', 'read-write'], default: 'read-only' } } },
    ],
    environmentVariables: [
      { name: 'FS_LOG_LEVEL', description: 'How much to log', choices: ['error', 'info', 'debug'], default: 'info' },
      { name: 'FS_AUDIT_TOKEN', description: 'Token of the audit sink', isRequired: true, isSecret: true },
    ],
  }],
  _meta: { 'io.modelcontextprotocol.registry/publisher-provided': { tool: 'northwind-release', version: '3.0.1' } },
})

const pypiDocument = (): Json => ({
  $schema: SERVER_SCHEMA_URL,
  name: `${NS}/git`,
  description: 'Inspect and change Git repositories.',
  version: '0.9.0-rc.1',
  packages: [{
    registryType: 'pypi', registryBaseUrl: 'https://pypi.org', identifier: 'northwind-mcp-git', version: '0.9.0rc1', runtimeHint: 'uvx',
    transport: { type: 'stdio' },
    runtimeArguments: [{ type: 'named', name: '--python', value: '{python_version}', variables: { python_version: { default: '3.12' } } }],
    environmentVariables: [{ name: 'GIT_AUTHOR_NAME', description: 'Author of commits', isRequired: false }],
  }],
})

const ociDocument = (): Json => ({
  $schema: SERVER_SCHEMA_URL,
  name: `${NS}/postgres`,
  title: 'Postgres Admin',
  description: 'Query and administer PostgreSQL databases from a container.',
  version: '2.1.0',
  packages: [{
    registryType: 'oci', registryBaseUrl: 'https://docker.io', identifier: 'docker.io/northwind/mcp-postgres:2.1.0', runtimeHint: 'docker',
    transport: { type: 'streamable-http', url: 'http://localhost:{port}/mcp' },
    runtimeArguments: [
      { type: 'named', name: '-p', value: '{port}:8080', variables: { port: { default: '8080', format: 'number' } } },
      { type: 'named', name: '-e', value: 'DATABASE_URL={database_url}', variables: { database_url: { isRequired: true, isSecret: true } } },
    ],
    environmentVariables: [{ name: 'DATABASE_URL', isRequired: true, isSecret: true }],
  }],
})

const nugetDocument = (): Json => ({
  $schema: SERVER_SCHEMA_URL,
  name: `${NS}/time-tools`,
  description: 'Time zones and calendars from a .NET tool.',
  version: '1.0.0',
  packages: [{
    registryType: 'nuget', registryBaseUrl: 'https://api.nuget.org/v3/index.json', identifier: 'Northwind.Mcp.TimeTools', version: '1.0.0',
    runtimeHint: 'dnx', transport: { type: 'stdio' },
    packageArguments: [{ type: 'positional', value: 'serve' }],
  }],
})

const mcpbDocument = (): Json => ({
  $schema: SERVER_SCHEMA_URL,
  name: `${NS}/text-tools`,
  description: 'Text tools packaged as an MCP bundle.',
  version: '1.1.0',
  packages: [{
    registryType: 'mcpb',
    identifier: 'https://github.com/northwind/text-tools/releases/download/v1.1.0/text-tools.mcpb',
    version: '1.1.0',
    fileSha256: 'fe333e598595000ae021bd27117db32ec69af6987f507ba7a63c90638ff633ce',
    transport: { type: 'stdio' },
  }],
})

/** Reached only over the network: one plain remote, one URL template with variables, headers on both. */
const hostedDocument = (): Json => ({
  $schema: SERVER_SCHEMA_URL,
  name: `${NS}/tickets`,
  description: 'Tickets and queues of the Northwind help desk.',
  version: '5.0.0',
  remotes: [
    {
      type: 'streamable-http',
      url: 'https://mcp.northwind.example/tickets',
      headers: [{ name: 'Authorization', description: 'Bearer token', value: 'Bearer {token}', isRequired: true, isSecret: true, variables: { token: { isSecret: true } } }],
    },
    {
      type: 'sse',
      url: 'https://{tenant}.northwind.example/tickets/sse',
      variables: { tenant: { description: 'Your tenant', isRequired: true } },
      headers: [{ name: 'X-Region', choices: ['eu', 'us'], default: 'eu' }],
    },
  ],
})

const realDocuments = (): Json[] => [filesystemDocument(), pypiDocument(), ociDocument(), nugetDocument(), mcpbDocument(), hostedDocument()]

function valid(read: ReadDocument): Extract<ReadDocument, { ok: true }> {
  if (!read.ok) throw new Error(`expected a valid document, got ${JSON.stringify(read.problems)}`)
  return read
}

function entryOf(document: Json, meta?: unknown): CatalogueEntry {
  const mapped = catalogueEntryOf(valid(readServerJson({ document, meta })))
  if (!mapped.ok) throw new Error(`expected the catalogue to hold it, got ${JSON.stringify(mapped.problems)}`)
  return mapped.entry
}

const problemsOf = (document: unknown) => {
  const read = readServerJson({ document })
  if (read.ok) throw new Error('expected an invalid document')
  return read
}

const catalogueProblems = (document: Json) => {
  const mapped = catalogueEntryOf(valid(readServerJson({ document })))
  if (mapped.ok) throw new Error('expected the catalogue to refuse it')
  return mapped.problems
}

const T0 = new Date('2026-10-01T09:00:00.000Z')
const T1 = new Date('2026-10-05T12:30:00.000Z')

/** A server row as the importer writes it from an entry (every column, the way the repository returns them). */
function serverRowOf(entry: CatalogueEntry | null, overrides: Partial<ServerRow> = {}): ServerRow {
  return {
    id: 'srv-1', name: entry?.displayName ?? 'Server', sortName: (entry?.displayName ?? 'server').toLowerCase(), slug: 'server',
    description: entry?.description ?? '', longDescription: null, categoryId: null, tags: [], language: null, runtime: null,
    languageKey: null, runtimeKey: null, transportType: entry?.transportType ?? 'stdio', status: 'active', featured: false,
    visibility: 'global', ownerTeamId: null, repositoryUrl: entry?.repositoryUrl ?? null, websiteUrl: entry?.websiteUrl ?? null,
    iconUrl: entry?.iconUrl ?? null, authorName: null, organization: null, license: null, packages: entry?.packages ?? [],
    remotes: entry?.remotes ?? [], latestVersion: entry?.version.version ?? null, registryName: entry?.registryName ?? null,
    source: entry === null ? 'manual' : 'registry', createdBy: null, createdAt: T0, updatedAt: T0,
    ...overrides,
  }
}

function versionRowOf(entry: CatalogueEntry | null, overrides: Partial<VersionRow> = {}): VersionRow {
  return {
    id: 'ver-1', serverId: 'srv-1', version: entry?.version.version ?? '1.0.0', precedence: entry?.version.precedence ?? '001100100010~',
    prerelease: entry?.version.prerelease ?? false, status: entry?.version.status ?? 'active', changelog: null,
    releaseDate: entry?.version.releaseDate ?? null, packages: entry?.packages ?? null, remotes: entry?.remotes ?? null,
    isLatest: true, serverJson: entry === null ? null : (entry.document as unknown as Record<string, unknown>), createdAt: T0, updatedAt: T0,
    ...overrides,
  }
}

describe('the official schema fixture', () => {
  it('is the 2025-12-11 schema as published', () => {
    expect(OFFICIAL_SCHEMA_TEXT).toHaveLength(22_076)
    const schema = JSON.parse(OFFICIAL_SCHEMA_TEXT) as Json
    expect(schema.$id).toBe(SERVER_SCHEMA_URL)
    expect(schema.$schema).toBe('http://json-schema.org/draft-07/schema#')
  })
})

describe('documentsOf', () => {
  it('unwraps a registry list answer into documents with their _meta', () => {
    const meta = { [OFFICIAL_META]: { status: 'active', publishedAt: '2026-09-01T10:00:00Z', updatedAt: '2026-09-02T10:00:00Z', isLatest: true } }
    const body = { servers: [{ server: pypiDocument(), _meta: meta }, { server: nugetDocument(), _meta: {} }], metadata: { count: 2 } }
    expect(documentsOf(body)).toEqual([{ document: pypiDocument(), meta }, { document: nugetDocument(), meta: {} }])
  })

  it('takes an array element by element, and one object as one document', () => {
    expect(documentsOf([pypiDocument(), 'text', nugetDocument()])).toEqual([{ document: pypiDocument() }, { document: 'text' }, { document: nugetDocument() }])
    expect(documentsOf(mcpbDocument())).toEqual([{ document: mcpbDocument() }])
  })

  it('finds nothing in a body that is neither an object nor an array', () => {
    expect(documentsOf('server.json')).toEqual([])
    expect(documentsOf(42)).toEqual([])
    expect(documentsOf(null)).toEqual([])
  })
})

describe('readServerJson with documents in the 2025-12-11 format', () => {
  it.each(realDocuments().map((document) => [document.name as string, document]))('accepts %s as published', (_name, document) => {
    const read = valid(readServerJson({ document }))
    expect(read.document).toEqual(document)
    expect(read.status).toBe('active')
    expect(officialProblems(read.document)).toEqual([])
  })

  it('keeps the members the format defines and the publisher _meta, and drops the rest', () => {
    const document = {
      ...filesystemDocument(),
      $schema: 'https://static.modelcontextprotocol.io/schemas/2025-10-17/server.schema.json',
      stars: 1200,
      repository: { url: 'https://github.com/northwind/mcp-filesystem', source: 'github', branch: 'main' },
      _meta: {
        [OFFICIAL_META]: { status: 'active', isLatest: true },
        'io.modelcontextprotocol.registry/publisher-provided': { tool: 'northwind-release' },
        'com.northwind/ci': { pipeline: 812 },
      },
    }
    const read = valid(readServerJson({ document }))
    expect(read.document.$schema).toBe(SERVER_SCHEMA_URL)
    expect(read.document).not.toHaveProperty('stars')
    expect(read.document.repository).toEqual({ url: 'https://github.com/northwind/mcp-filesystem', source: 'github' })
    expect(read.document._meta).toEqual({ 'io.modelcontextprotocol.registry/publisher-provided': { tool: 'northwind-release' }, 'com.northwind/ci': { pipeline: 812 } })
  })

  it('takes the status and dates from the list item, else from the document own _meta', () => {
    const meta = { [OFFICIAL_META]: { status: 'deleted', publishedAt: '2026-09-01T10:00:00Z', updatedAt: '2026-09-03T11:00:00.5Z', isLatest: false } }
    const read = valid(readServerJson({ document: nugetDocument(), meta }))
    expect(read.status).toBe('deleted')
    expect(read.publishedAt?.toISOString()).toBe('2026-09-01T10:00:00.000Z')
    expect(read.updatedAt?.toISOString()).toBe('2026-09-03T11:00:00.500Z')
    const own = valid(readServerJson({ document: { ...nugetDocument(), _meta: { [OFFICIAL_META]: { status: 'deprecated' } } } }))
    expect(own.status).toBe('deprecated')
    expect(own.document).not.toHaveProperty('_meta')
  })
})

describe('readServerJson with the older shapes', () => {
  const seed = (): Json => ({
    id: '2e1cb64f-53b8-4bf5-a4ad-1c1b8a3f4e10',
    name: `${NS}/search`,
    description: 'Web search through the Northwind index.',
    repository: { url: 'https://github.com/northwind/search', source: 'github', id: '55001' },
    version_detail: { version: '0.6.2', release_date: '2025-05-16T19:13:21Z', is_latest: true },
    packages: [
      {
        registry_name: 'npm',
        name: '@northwind/search-mcp',
        version: '0.6.2',
        package_arguments: [{ type: 'positional', value_hint: 'profile', is_required: true, description: 'Profile to use' }],
        environment_variables: [{ name: 'SEARCH_KEY', description: 'Index key', is_required: true, is_secret: true }],
      },
      { registry_name: 'docker', name: 'northwind/search-mcp', version: '0.6.2', runtime_arguments: [{ type: 'named', name: '--rm', is_repeated: false }] },
    ],
    remotes: [{ transport_type: 'sse', url: 'https://search.northwind.example/sse', headers: [{ name: 'X-Key', is_secret: true, is_required: true }] }],
  })

  it('up-converts the May-2025 seed shape', () => {
    const read = valid(readServerJson({ document: seed() }))
    expect(read.document).toEqual({
      $schema: SERVER_SCHEMA_URL,
      name: `${NS}/search`,
      description: 'Web search through the Northwind index.',
      version: '0.6.2',
      repository: { url: 'https://github.com/northwind/search', source: 'github', id: '55001' },
      packages: [
        {
          registryType: 'npm', identifier: '@northwind/search-mcp', version: '0.6.2', transport: { type: 'stdio' },
          packageArguments: [{ type: 'positional', valueHint: 'profile', isRequired: true, description: 'Profile to use' }],
          environmentVariables: [{ name: 'SEARCH_KEY', description: 'Index key', isRequired: true, isSecret: true }],
        },
        { registryType: 'oci', identifier: 'northwind/search-mcp', version: '0.6.2', transport: { type: 'stdio' }, runtimeArguments: [{ type: 'named', name: '--rm', isRepeated: false }] },
      ],
      remotes: [{ type: 'sse', url: 'https://search.northwind.example/sse', headers: [{ name: 'X-Key', isSecret: true, isRequired: true }] }],
    })
    expect(read.publishedAt?.toISOString()).toBe('2025-05-16T19:13:21.000Z')
    expect(officialProblems(read.document)).toEqual([])
  })

  it('up-converts the 2025-07 shape, its status included', () => {
    const july = {
      $schema: 'https://static.modelcontextprotocol.io/schemas/2025-07-09/server.schema.json',
      name: `${NS}/ledger`,
      description: 'Double-entry bookkeeping.',
      status: 'deprecated',
      version: '2.3.0',
      website_url: 'https://northwind.example/ledger',
      packages: [{
        registry_type: 'pypi', registry_base_url: 'https://pypi.org', identifier: 'northwind-ledger', version: '2.3.0', runtime_hint: 'uvx',
        file_sha256: 'ab'.repeat(32),
        transport: { type: 'streamable-http', url: 'http://localhost:8765/mcp', headers: [{ name: 'X-Book', value_hint: 'book', is_required: true }] },
        package_arguments: [{ type: 'named', name: '--book', value: '{book}', is_repeated: true, variables: { book: { is_required: true } } }],
        environment_variables: [{ name: 'LEDGER_TOKEN', is_required: true, is_secret: true }],
      }],
      remotes: [{ type: 'streamable-http', url: 'https://ledger.northwind.example/mcp' }],
    }
    const read = valid(readServerJson({ document: july }))
    expect(read.status).toBe('deprecated')
    expect(read.document).toEqual({
      $schema: SERVER_SCHEMA_URL,
      name: `${NS}/ledger`,
      description: 'Double-entry bookkeeping.',
      version: '2.3.0',
      websiteUrl: 'https://northwind.example/ledger',
      packages: [{
        registryType: 'pypi', registryBaseUrl: 'https://pypi.org', identifier: 'northwind-ledger', version: '2.3.0', runtimeHint: 'uvx',
        fileSha256: 'ab'.repeat(32),
        transport: { type: 'streamable-http', url: 'http://localhost:8765/mcp', headers: [{ name: 'X-Book', valueHint: 'book', isRequired: true }] },
        packageArguments: [{ type: 'named', name: '--book', value: '{book}', isRepeated: true, variables: { book: { isRequired: true } } }],
        environmentVariables: [{ name: 'LEDGER_TOKEN', isRequired: true, isSecret: true }],
      }],
      remotes: [{ type: 'streamable-http', url: 'https://ledger.northwind.example/mcp' }],
    })
    expect(officialProblems(read.document)).toEqual([])
    expect(entryOf(july).version.status).toBe('deprecated')
  })

  it('lets the list item status win over the document own', () => {
    const july = { name: `${NS}/old`, description: 'Old.', version: '1.0.0', status: 'deprecated', packages: [] }
    expect(valid(readServerJson({ document: july, meta: { [OFFICIAL_META]: { status: 'active' } } })).status).toBe('active')
  })
})

describe('readServerJson refusals', () => {
  it('names a missing name, and has no name to report', () => {
    const { name: _name, ...document } = pypiDocument()
    const read = problemsOf(document)
    expect(read.name).toBeNull()
    expect(read.problems).toEqual([{ field: 'name', message: 'is required' }])
  })

  it('explains the name pattern, and reports the name', () => {
    const read = problemsOf({ ...pypiDocument(), name: 'io.github.northwind/servers/git' })
    expect(read.name).toBe('io.github.northwind/servers/git')
    expect(read.problems).toHaveLength(1)
    expect(read.problems[0]!.field).toBe('name')
    expect(read.problems[0]!.message).toMatch(/one slash/)
  })

  it('refuses a description of 101 characters', () => {
    expect(problemsOf({ ...pypiDocument(), description: 'x'.repeat(101) }).problems).toEqual([{ field: 'description', message: 'must be at most 100 characters long' }])
    expect(valid(readServerJson({ document: { ...pypiDocument(), description: 'é'.repeat(100) } })).document.description).toHaveLength(100)
  })

  it('refuses a package without transport in the 2025-12-11 format', () => {
    const document = nugetDocument()
    delete (document.packages as Json[])[0]!.transport
    expect(problemsOf(document).problems).toEqual([{ field: 'packages[0].transport', message: 'is required' }])
  })

  it('refuses "latest" as a package version', () => {
    const document = mcpbDocument()
    ;(document.packages as Json[])[0]!.version = 'latest'
    expect(problemsOf(document).problems).toEqual([{ field: 'packages[0].version', message: 'must be a specific version, not "latest"' }])
  })

  it('names the field of every problem, one message per argument or transport', () => {
    const document = ociDocument()
    const item = (document.packages as Json[])[0]!
    item.transport = { type: 'streamable-http' }
    item.runtimeArguments = [{ type: 'flag', name: '-p' }, { type: 'positional', description: 'no value, no hint' }]
    item.fileSha256 = 'ABC'
    document.remotes = [{ type: 'websocket', url: 'wss://mcp.northwind.example' }, { type: 'sse', url: 'ftp://mcp.northwind.example/sse' }]
    document.icons = [{ src: 'http://northwind.example/icon.png' }]
    expect(problemsOf(document).problems).toEqual([
      { field: 'icons[0].src', message: 'must be an https URL' },
      { field: 'packages[0].fileSha256', message: 'must be a SHA-256 hash: 64 lowercase hexadecimal digits' },
      { field: 'packages[0].transport.url', message: 'is required' },
      { field: 'packages[0].runtimeArguments[0].type', message: 'must be one of: named, positional' },
      { field: 'packages[0].runtimeArguments[1].valueHint', message: 'is required when the positional argument has no value' },
      { field: 'remotes[0].type', message: 'must be one of: streamable-http, sse' },
      { field: 'remotes[1].url', message: 'must be an http or https URL without spaces (variables in {braces} allowed)' },
    ])
  })

  it('refuses what is not an object, wrong types, and text a database cannot store', () => {
    expect(problemsOf(['a']).problems).toEqual([{ field: '(document)', message: 'must be a JSON object (a server.json document)' }])
    expect(problemsOf({ ...pypiDocument(), version: 2, packages: {} }).problems).toEqual([
      { field: 'version', message: 'must be text' },
      { field: 'packages', message: 'must be a list' },
    ])
    expect(problemsOf({ ...pypiDocument(), title: 'Git\u0000' }).problems).toEqual([{ field: 'title', message: 'must not contain NUL characters or unpaired surrogates' }])
    const lonely = { ...pypiDocument(), _meta: { 'com.northwind/notes': { ['\ud800']: 'x' } } }
    expect(problemsOf(lonely).problems).toEqual([{ field: '_meta["com.northwind/notes"]["\\ud800"]', message: 'must not contain NUL characters or unpaired surrogates' }])
    let deep: Json = { end: true }
    for (let level = 0; level < 40; level++) deep = { deeper: deep }
    expect(problemsOf({ ...pypiDocument(), _meta: { 'com.northwind/deep': deep } }).problems).toEqual([
      { field: `_meta["com.northwind/deep"]${'.deeper'.repeat(30)}`, message: 'is nested too deeply (more than 32 levels)' },
    ])
  })
})

describe('catalogueEntryOf', () => {
  it('maps an npm document onto the catalogue', () => {
    const entry = entryOf(filesystemDocument())
    expect(entry).toMatchObject({
      registryName: `${NS}/filesystem`,
      displayName: 'Northwind Filesystem',
      description: 'Read, write and search files under the directories you allow.',
      repositoryUrl: 'https://github.com/northwind/mcp-filesystem',
      websiteUrl: 'https://northwind.example/mcp/filesystem',
      iconUrl: 'https://northwind.example/icons/fs.png',
      transportType: 'stdio',
      remotes: [],
      version: { version: '1.4.2', prerelease: false, status: 'active', releaseDate: null },
    })
    // As published, its runner options point npx at another registry and take a word from the
    // installer: the package is left out of the catalogue, each argument named.
    expect(entry.packages).toEqual([])
    expect(entry.notCatalogued.map((problem) => problem.field)).toEqual(['packages[0].runtimeArguments[2]', 'packages[0].runtimeArguments[0]'])
    expect(entry.notCatalogued[1]!.message).toMatch(/"--registry" is not a runtime option/)

    const harmless = filesystemDocument()
    ;(harmless.packages as Json[])[0]!.runtimeArguments = [{ type: 'positional', value: '-y' }]
    expect(entryOf(harmless).packages).toEqual([{
      registry_type: 'npm',
      identifier: '@northwind/mcp-filesystem',
      version: '1.4.2',
      runtime_args: ['-y'],
      environment_variables: [
        { name: 'FS_LOG_LEVEL', description: 'How much to log', required: false, secret: false, default: 'info' },
        { name: 'FS_AUDIT_TOKEN', description: 'Token of the audit sink', required: true, secret: true },
      ],
    }])
  })

  it('maps every other package type and the transport of the first package or remote', () => {
    const [, pypi, oci, nuget, mcpb, hosted] = realDocuments().map((document) => entryOf(document))
    expect(pypi!.displayName).toBe('git')
    expect(pypi!.version).toMatchObject({ version: '0.9.0-rc.1', prerelease: true })
    // `--python` takes a word the installer fills in, and GIT_* variables steer git: left out, both named.
    expect(pypi!.packages).toEqual([])
    expect(pypi!.notCatalogued.map((problem) => problem.field).sort()).toEqual(['packages[0].environmentVariables[0].name', 'packages[0].runtimeArguments[0]'])
    expect(oci!.transportType).toBe('http')
    // docker options (`-p`, `-e`) reach the host: an image takes none.
    expect(oci!.packages).toEqual([])
    expect(oci!.notCatalogued.map((problem) => problem.field)).toEqual(['packages[0].runtimeArguments[0]'])
    expect(nuget!.packages).toEqual([{ registry_type: 'nuget', identifier: 'Northwind.Mcp.TimeTools', version: '1.0.0' }])
    expect(mcpb!.packages).toEqual([{ registry_type: 'mcpb', identifier: 'https://github.com/northwind/text-tools/releases/download/v1.1.0/text-tools.mcpb', version: '1.1.0' }])
    // Remotes as published: the URL template with its variables, the headers with theirs.
    expect(hosted!.transportType).toBe('http')
    expect(hosted!.packages).toEqual([])
    expect(hosted!.remotes).toEqual(hostedDocument().remotes)
    expect(hosted!.document.remotes).toEqual(hostedDocument().remotes)
  })

  it('takes the status and release date from the registry', () => {
    const entry = entryOf(nugetDocument(), { [OFFICIAL_META]: { status: 'deleted', publishedAt: '2026-09-01T10:00:00Z' } })
    expect(entry.version.status).toBe('yanked')
    expect(entry.version.releaseDate?.toISOString()).toBe('2026-09-01T10:00:00.000Z')
  })

  it('keeps a package of a type the catalogue does not hold in the document only, and says why', () => {
    const cargo = { registryType: 'cargo', identifier: 'northwind-mcp', version: '1.0.0', transport: { type: 'stdio' } }
    const document = { ...nugetDocument(), packages: [cargo, ...(nugetDocument().packages as Json[])] }
    // The official schema leaves the registry type open: the document is valid there.
    expect(officialProblems(document)).toEqual([])
    const entry = entryOf(document)
    expect(entry.packages).toEqual([{ registry_type: 'nuget', identifier: 'Northwind.Mcp.TimeTools', version: '1.0.0' }])
    expect(entry.document.packages).toEqual(document.packages)
    expect(entry.notCatalogued).toEqual([
      { field: 'packages[0].registryType', message: 'registry type "cargo" is not one this catalogue holds (npm, pypi, oci, nuget, mcpb)' },
    ])
    expect(entryOf(nugetDocument()).notCatalogued).toEqual([])
  })

  it('refuses a version that is not a semantic version', () => {
    const problems = catalogueProblems({ ...nugetDocument(), version: '2024.10' })
    expect(problems).toHaveLength(1)
    expect(problems[0]!.field).toBe('version')
    expect(problems[0]!.message).toMatch(/"2024\.10" is not a semantic version/)
  })

  it('catalogues only packages whose identifiers and variables follow the rules of servers made by hand', () => {
    const document = filesystemDocument()
    const item = (document.packages as Json[])[0]!
    item.identifier = '@Northwind/MCP Filesystem'
    ;(item.environmentVariables as Json[])[1]!.name = 'AUDIT-TOKEN'
    const mcpb = { ...mcpbDocument(), packages: [{ registryType: 'mcpb', identifier: 'text-tools.mcpb', transport: { type: 'stdio' } }] }
    const nuget = { ...nugetDocument(), packages: [{ registryType: 'nuget', identifier: 'Northwind..Tools', transport: { type: 'stdio' } }] }
    const [filesystem, bundle, dotted] = [document, mcpb, nuget].map((each) => entryOf(each))
    expect(filesystem!.notCatalogued.map((problem) => problem.field)).toEqual(['packages[0].identifier', 'packages[0].environmentVariables[1].name'])
    expect(bundle!.notCatalogued).toEqual([{ field: 'packages[0].identifier', message: expect.stringMatching(/^does not have the expected form \(The https URL of the bundle/) }])
    expect(dotted!.notCatalogued.map((problem) => problem.field)).toEqual(['packages[0].identifier'])
    for (const [entry, given] of [[filesystem!, document], [bundle!, mcpb], [dotted!, nuget]] as const) {
      expect(entry.packages).toEqual([])
      expect(entry.document.packages).toEqual(given.packages)
    }
  })

  it('keeps links the catalogue cannot hold out of its fields', () => {
    const entry = entryOf({ ...pypiDocument(), websiteUrl: 'ftp://northwind.example/git', repository: { url: 'git://northwind.example/git', source: 'self-hosted' } })
    expect(entry.websiteUrl).toBeNull()
    expect(entry.repositoryUrl).toBeNull()
  })
})

describe('exportDocument', () => {
  const namespace = namespaceOf('https://platform.example.com')

  it('builds a document for a server made by hand', () => {
    const packages: ServerPackage[] = [
      { registry_type: 'docker', identifier: 'ghcr.io/northwind/crm-mcp:3.2.0', version: '3.2.0', runtime_args: ['--rm', '-i'], environment_variables: [{ name: 'CRM_TOKEN', description: '', required: true, secret: true }] },
      { registry_type: 'npm', identifier: 'northwind-crm', version: 'latest' },
    ]
    const remotes: ServerRemote[] = [{ type: 'streamable-http', url: 'https://crm.northwind.example/mcp' }]
    const server = serverRowOf(null, {
      name: 'Northwind CRM', slug: 'northwind-crm', description: `Customers, deals and notes. ${'Lots more detail. '.repeat(10)}`,
      transportType: 'http', packages, remotes, repositoryUrl: 'https://gitlab.com/northwind/crm-mcp', websiteUrl: 'https://northwind.example/crm',
      iconUrl: 'https://northwind.example/crm.svg',
    })
    const document = exportDocument(server, versionRowOf(null, { version: '3.2.0' }), namespace)
    expect(document.name).toBe('com.example.platform/northwind-crm')
    expect(document.title).toBe('Northwind CRM')
    expect(Array.from(document.description)).toHaveLength(100)
    expect(document.description.endsWith('…')).toBe(true)
    expect(document.description.startsWith('Customers, deals and notes.')).toBe(true)
    expect(document.version).toBe('3.2.0')
    expect(document.repository).toEqual({ url: 'https://gitlab.com/northwind/crm-mcp', source: 'gitlab' })
    expect(document.websiteUrl).toBe('https://northwind.example/crm')
    expect(document.icons).toEqual([{ src: 'https://northwind.example/crm.svg' }])
    expect(document.packages).toEqual([
      {
        registryType: 'oci', identifier: 'ghcr.io/northwind/crm-mcp:3.2.0', version: '3.2.0', runtimeHint: 'docker',
        transport: { type: 'streamable-http', url: 'https://crm.northwind.example/mcp' },
        runtimeArguments: [{ type: 'positional', value: '--rm' }, { type: 'positional', value: '-i' }],
        environmentVariables: [{ name: 'CRM_TOKEN', isRequired: true, isSecret: true }],
      },
      { registryType: 'npm', identifier: 'northwind-crm', transport: { type: 'streamable-http', url: 'https://crm.northwind.example/mcp' } },
    ])
    expect(document.remotes).toEqual(remotes)
    expect(officialProblems(document)).toEqual([])
  })

  it('writes a hand-made server remote with its headers and variables as they are held', () => {
    const remotes: ServerRemote[] = [{
      type: 'streamable-http',
      url: 'https://{tenant}.northwind.example/mcp?key=<YOUR_KEY>',
      headers: [{ name: 'Authorization', value: 'Bearer {token}', isRequired: true, isSecret: true, variables: { token: { isSecret: true } } }],
      variables: { tenant: { description: 'Your tenant', choices: ['acme', 'globex'], default: 'acme' } },
    }]
    const exported = exportDocument(serverRowOf(null, { remotes, transportType: 'http' }), null, namespace)
    expect(exported.remotes).toEqual(remotes)
    expect(officialProblems({ ...exported, remotes: [{ ...remotes[0], url: 'https://{tenant}.northwind.example/mcp' }] })).toEqual([])
  })

  it('exports a server without versions as 0.0.0, with its name when it has no description', () => {
    const server = serverRowOf(null, { name: 'scratch', slug: 'scratch', description: '', packages: [{ registry_type: 'pypi', identifier: 'scratch-mcp' }] })
    const document = exportDocument(server, null, namespace)
    expect(document).toEqual({
      $schema: SERVER_SCHEMA_URL, name: 'com.example.platform/scratch', description: 'scratch', version: '0.0.0',
      packages: [{ registryType: 'pypi', identifier: 'scratch-mcp', transport: { type: 'stdio' } }],
    })
    expect(officialProblems(document)).toEqual([])
  })

  it.each(realDocuments().map((document) => [document.name as string, document]))('gives back the canonical document of %s', (_name, document) => {
    const read = valid(readServerJson({ document: { ...document, stars: 5 }, meta: { [OFFICIAL_META]: { status: 'active' } } }))
    const mapped = catalogueEntryOf(read)
    if (!mapped.ok) throw new Error(JSON.stringify(mapped.problems))
    const entry = mapped.entry
    const exported = exportDocument(serverRowOf(entry, { slug: 'any-slug' }), versionRowOf(entry), namespace)
    expect(exported).toEqual(read.document)
    expect(officialProblems(exported)).toEqual([])
  })

  it('puts the catalogue own fields over an imported document', () => {
    const entry = entryOf(filesystemDocument())
    const server = serverRowOf(entry, {
      name: 'Files', description: `Edited here: ${'x'.repeat(200)}`, websiteUrl: null, repositoryUrl: 'https://github.com/northwind/fs-fork',
    })
    const exported = exportDocument(server, versionRowOf(entry), namespace)
    expect(exported.name).toBe(`${NS}/filesystem`)
    expect(exported.title).toBe('Files')
    expect(exported.description).toHaveLength(100)
    expect(exported).not.toHaveProperty('websiteUrl')
    expect(exported.repository).toEqual({ url: 'https://github.com/northwind/fs-fork', source: 'github', id: '81723344', subfolder: 'packages/server' })
    expect(exported.packages).toEqual(entry.document.packages)
    expect(exported._meta).toEqual(entry.document._meta)
    expect(officialProblems(exported)).toEqual([])
    // A display name equal to the name's last part needs no title.
    expect(exportDocument(serverRowOf(entry, { name: 'filesystem' }), versionRowOf(entry), namespace)).not.toHaveProperty('title')
  })

  it('exports an up-converted older document that the official schema accepts', () => {
    const seed = { name: `${NS}/legacy`, description: 'Legacy.', version_detail: { version: '0.1.0' }, packages: [{ registry_name: 'pypi', name: 'northwind-legacy', version: '0.1.0' }] }
    const entry = entryOf(seed)
    const exported: ServerJson = exportDocument(serverRowOf(entry), versionRowOf(entry), namespace)
    expect(exported.packages).toEqual([{ registryType: 'pypi', identifier: 'northwind-legacy', version: '0.1.0', transport: { type: 'stdio' } }])
    expect(officialProblems(exported)).toEqual([])
  })
})

describe('remote and transport URLs', () => {
  const withRemoteUrl = (url: string): Json => ({ ...hostedDocument(), remotes: [{ type: 'sse', url }] })
  const withTransportUrl = (url: string): Json => ({ ...ociDocument(), packages: [{ ...(ociDocument().packages as Json[])[0]!, transport: { type: 'streamable-http', url } }] })

  it('takes http(s) URLs without whitespace: placeholders, templates, characters RFC 3986 would escape', () => {
    for (const url of [
      'https://mcp.amap.com/sse?key=<YOUR_TOKEN>',
      'https://{tenant}.northwind.example/sse',
      'http://localhost:{port}/mcp',
      'HTTPS://mcp.northwind.example/sse',
      'https://mcp.northwind.example/sse?filter=a|b&q="x"',
      'https://例え.example/mcp',
    ]) {
      expect(entryOf(withRemoteUrl(url)).remotes, url).toEqual([{ type: 'sse', url }])
      expect(valid(readServerJson({ document: withTransportUrl(url) })).document.packages![0]!.transport.url, url).toBe(url)
    }
  })

  it('refuses other schemes, relative URLs, whitespace and control characters, in remotes and package transports alike', () => {
    for (const url of ['javascript:alert(1)', 'wss://mcp.northwind.example', '/relative/sse', '//mcp.northwind.example/sse', 'https://', 'https:///sse', 'https://mcp.northwind.example/s se', 'https://mcp.northwind.example/sse\n', 'https://mcp.northwind.example/\u0007', ' https://mcp.northwind.example/sse']) {
      const message = 'must be an http or https URL without spaces (variables in {braces} allowed)'
      expect(problemsOf(withRemoteUrl(url)).problems, url).toEqual([{ field: 'remotes[0].url', message }])
      expect(problemsOf(withTransportUrl(url)).problems, url).toEqual([{ field: 'packages[0].transport.url', message }])
    }
  })

  it('catalogues only remotes that follow the catalogue own rules: not a header name that is no HTTP token, nor a URL over 2 048 characters', () => {
    const plain = { type: 'sse', url: 'https://mcp.northwind.example/sse' }
    const badHeader = { ...hostedDocument(), remotes: [{ ...plain, headers: [{ name: 'X Key' }] }, plain] }
    const long = { ...hostedDocument(), remotes: [{ type: 'sse', url: `https://mcp.northwind.example/${'a'.repeat(2048)}` }] }
    const [header, url] = [badHeader, long].map((each) => entryOf(each))
    expect(header!.notCatalogued.map((problem) => problem.field)).toEqual(['remotes[0].headers[0].name'])
    expect(header!.remotes).toEqual([plain])
    expect(header!.document.remotes).toEqual(badHeader.remotes)
    expect(url!.notCatalogued).toEqual([{ field: 'remotes[0].url', message: 'must be at most 2048 characters long' }])
    expect(url!.remotes).toEqual([])
    expect(url!.document.remotes).toEqual(long.remotes)
  })

  it('keeps only the members the format gives inputs in the catalogue copy; the stored document keeps what it defines', () => {
    const document = { ...hostedDocument(), remotes: [{ type: 'sse', url: 'https://{region}.northwind.example/sse', headers: [{ name: 'X-Key', valueHint: 'key', isSecret: true }], variables: { region: { default: 'eu', isRepeated: true } } }] }
    const entry = entryOf(document)
    expect(entry.remotes).toEqual([{ type: 'sse', url: 'https://{region}.northwind.example/sse', headers: [{ name: 'X-Key', isSecret: true }], variables: { region: { default: 'eu' } } }])
  })
})

describe('older shapes: what the May 2025 seed allowed and the 2025-12-11 rules do not', () => {
  const seedEntry = (fields: Json = {}, item: Json = {}): Json => ({
    name: `${NS}/seeded`,
    description: 'A seeded server.',
    repository: { url: 'https://github.com/northwind/seeded', source: 'github', id: '1' },
    version_detail: { version: '0.0.1-seed', release_date: '2025-05-16T18:56:49Z', is_latest: true },
    packages: [{ registry_name: 'npm', name: '@northwind/seeded', version: '1.0.0', ...item }],
    ...fields,
  })

  it('a description over 100 characters: shortened in the document, whole in the catalogue', () => {
    const long = `${'Searches the Northwind index, '.repeat(5)}and more.`
    const read = valid(readServerJson({ document: seedEntry({ description: long }) }))
    expect(Array.from(read.document.description).length).toBeGreaterThan(90)
    expect(Array.from(read.document.description).length).toBeLessThanOrEqual(100)
    expect(read.document.description.endsWith('…')).toBe(true)
    expect(long.startsWith(read.document.description.slice(0, -1))).toBe(true)
    expect(entryOf(seedEntry({ description: long })).description).toBe(long)
    expect(officialProblems(read.document)).toEqual([])
  })

  it('an empty description: the name last part in the document, empty in the catalogue', () => {
    const read = valid(readServerJson({ document: seedEntry({ description: '' }) }))
    expect(read.document.description).toBe('seeded')
    expect(entryOf(seedEntry({ description: '' })).description).toBe('')
  })

  it('an empty package version is dropped', () => {
    const read = valid(readServerJson({ document: seedEntry({}, { version: '' }) }))
    expect(read.document.packages).toEqual([{ registryType: 'npm', identifier: '@northwind/seeded', transport: { type: 'stdio' } }])
  })

  it('an empty transport_type is read from the URL path: /sse is SSE, anything else streamable HTTP', () => {
    const remotes = [{ transport_type: '', url: 'http://localhost:8000/sse' }, { transport_type: '', url: 'https://mcp.northwind.example/mcp?sse=1' }]
    expect(valid(readServerJson({ document: seedEntry({ remotes }) })).document.remotes).toEqual([
      { type: 'sse', url: 'http://localhost:8000/sse' },
      { type: 'streamable-http', url: 'https://mcp.northwind.example/mcp?sse=1' },
    ])
  })

  it('a package the catalogue cannot hold (registry type unknown, an identifier no registry takes) stays in the document only, as in a 2025-12-11 document', () => {
    const unknown = seedEntry({}, { registry_name: 'unknown', name: 'seeded-mcp' })
    const entry = entryOf(unknown)
    expect(entry.packages).toEqual([])
    expect(entry.document.packages).toEqual([{ registryType: 'unknown', identifier: 'seeded-mcp', version: '1.0.0', transport: { type: 'stdio' } }])
    expect(entry.notCatalogued.map((problem) => problem.field)).toEqual(['packages[0].registryType'])
    const seeded = entryOf(seedEntry({}, { name: 'Northwind/seeded' }))
    expect(seeded.packages).toEqual([])
    // The same package in a 2025-12-11 document (such as the export of the one above) is treated alike.
    const current = { ...nugetDocument(), packages: [{ registryType: 'npm', identifier: 'Northwind/seeded', transport: { type: 'stdio' } }] }
    const again = entryOf(current)
    expect(again.packages).toEqual([])
    expect(again.document.packages).toEqual(current.packages)
    expect(again.notCatalogued).toEqual(seeded.notCatalogued)
    expect(again.notCatalogued.map((problem) => problem.field)).toEqual(['packages[0].identifier'])
  })
})

describe('names and item metadata', () => {
  it('reverses the public host into a namespace the name pattern admits', () => {
    expect(namespaceOf('https://platform.example.com')).toBe('com.example.platform')
    expect(namespaceOf('https://Platform.Example.com:8443/base/')).toBe('com.example.platform')
    expect(namespaceOf('http://localhost:3000')).toBe('localhost')
    expect(namespaceOf('http://10.0.0.5:8080')).toBe('local.10-0-0-5')
    expect(namespaceOf('http://[::1]:3000')).toBe('local.1')
    expect(namespaceOf('http://[fd00::2]')).toBe('local.fd00-2')
    for (const url of ['https://platform.example.com', 'http://localhost', 'http://10.0.0.5', 'http://[2001:db8::1]', `https://${'a'.repeat(60)}.${'b'.repeat(60)}.example.com`]) {
      const name = `${namespaceOf(url)}/${'s'.repeat(100)}`
      expect(name).toMatch(/^[a-zA-Z0-9.-]+\/[a-zA-Z0-9._-]+$/)
      expect(name.length).toBeLessThanOrEqual(200)
    }
  })

  it('names an imported server by its registry name, a hand-made one by namespace and slug', () => {
    expect(registryNameOf({ registryName: 'io.github.northwind/git', slug: 'git' }, 'com.example')).toBe('io.github.northwind/git')
    expect(registryNameOf({ registryName: null, slug: 'git-2' }, 'com.example')).toBe('com.example/git-2')
  })

  it('gives a version the registry status, dates and latest mark', () => {
    const server = serverRowOf(null, { updatedAt: T1 })
    expect(itemMeta(server, versionRowOf(null, { status: 'yanked', isLatest: false }))).toEqual({
      [OFFICIAL_META]: { status: 'deleted', publishedAt: T0.toISOString(), updatedAt: T1.toISOString(), isLatest: false },
    })
    const later = new Date('2026-11-01T00:00:00.000Z')
    expect(itemMeta(serverRowOf(null), versionRowOf(null, { status: 'deprecated', updatedAt: later }))).toEqual({
      [OFFICIAL_META]: { status: 'deprecated', publishedAt: T0.toISOString(), updatedAt: later.toISOString(), isLatest: true },
    })
  })
})
