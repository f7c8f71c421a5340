/**
 * server.json documents as publishers write them, for the import and export tests: every package
 * type the catalogue holds, remotes with headers and URL variables, arguments with variables, the
 * publisher's `_meta`, and the two older shapes.
 */

export const SCHEMA_2025_12_11 = 'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json'
export const OFFICIAL = 'io.modelcontextprotocol.registry/official'

type Json = Record<string, unknown>

/** An npm server with a remote, arguments with variables, headers, icons and the publisher's metadata. */
export function weatherDocument(namespace: string, version = '1.2.0'): Json {
  return {
    $schema: SCHEMA_2025_12_11,
    name: `${namespace}/weather`,
    title: 'Acme Weather',
    description: 'Forecasts, alerts and current conditions for any city.',
    version,
    websiteUrl: 'https://acme-labs.example/weather',
    repository: { url: 'https://github.com/acme-labs/mcp-servers', source: 'github', id: '734112908', subfolder: 'servers/weather' },
    icons: [{ src: 'https://acme-labs.example/weather.png', mimeType: 'image/png', sizes: ['48x48', '96x96'], theme: 'light' }],
    packages: [{
      registryType: 'npm',
      registryBaseUrl: 'https://registry.npmjs.org',
      identifier: '@acme-labs/weather-mcp',
      version,
      runtimeHint: 'npx',
      transport: { type: 'stdio' },
      // Runner options are limited to harmless ones (formats/runtime-rules.ts); the package's own go after `--`.
      runtimeArguments: [{ type: 'positional', value: '--quiet' }, { type: 'positional', value: '-y' }],
      packageArguments: [
        { type: 'positional', valueHint: 'city', description: 'The city forecasts default to', isRequired: true },
        { type: 'named', name: '--units', value: '{units}', variables: { units: { choices: ['metric', 'imperial'], default: 'metric' } } },
      ],
      environmentVariables: [
        { name: 'ACME_API_KEY', description: 'Your Acme Labs API key', isRequired: true, isSecret: true },
        { name: 'ACME_CACHE_DIR', description: 'Where forecasts are cached', format: 'filepath', default: '/tmp/acme-weather' },
      ],
    }],
    remotes: [
      {
        type: 'streamable-http',
        url: 'https://mcp.acme-labs.example/weather',
        headers: [{ name: 'Authorization', description: 'Bearer token', value: 'Bearer {token}', isRequired: true, isSecret: true, variables: { token: { isSecret: true, isRequired: true } } }],
      },
      { type: 'sse', url: 'https://{region}.acme-labs.example/weather/sse', variables: { region: { description: 'Data centre', choices: ['eu', 'us'], default: 'eu' } } },
    ],
    _meta: { 'io.modelcontextprotocol.registry/publisher-provided': { tool: 'acme-publisher', version: '2.4.0', buildInfo: { commit: '4f1c2e9', timestamp: '2026-10-02T08:00:00Z' } } },
  }
}

/** One server per package type besides npm, and one reached only over the network. */
export function otherTypeDocuments(namespace: string): Json[] {
  return [
    {
      $schema: SCHEMA_2025_12_11,
      name: `${namespace}/notes`,
      description: 'Searchable notes in a local SQLite file.',
      version: '0.4.1',
      packages: [{
        registryType: 'pypi', registryBaseUrl: 'https://pypi.org', identifier: 'acme-notes-mcp', version: '0.4.1', runtimeHint: 'uvx',
        transport: { type: 'stdio' },
        runtimeArguments: [{ type: 'named', name: '--python', value: '3.12' }],
        packageArguments: [{ type: 'positional', valueHint: 'extra_index' }],
        environmentVariables: [{ name: 'NOTES_DB', description: 'Path of the notes database', isRequired: true, format: 'filepath' }],
      }],
    },
    {
      $schema: SCHEMA_2025_12_11,
      name: `${namespace}/db-admin`,
      title: 'Database Admin',
      description: 'Inspect and administer PostgreSQL databases.',
      version: '2.0.1',
      packages: [{
        registryType: 'oci', registryBaseUrl: 'https://ghcr.io', identifier: 'ghcr.io/acme-labs/db-admin:2.0.1', runtimeHint: 'docker',
        transport: { type: 'streamable-http', url: 'http://localhost:{port}/mcp' },
        packageArguments: [{ type: 'named', name: '--port', value: '{port}', variables: { port: { default: '8080', format: 'number' } } }],
        environmentVariables: [{ name: 'DATABASE_URL', isRequired: true, isSecret: true }],
      }],
    },
    {
      $schema: SCHEMA_2025_12_11,
      name: `${namespace}/dotnet-tools`,
      description: 'Random numbers and weather from a .NET tool.',
      version: '1.0.0-beta.2',
      packages: [{
        registryType: 'nuget', registryBaseUrl: 'https://api.nuget.org/v3/index.json', identifier: 'AcmeLabs.Mcp.Tools', version: '1.0.0-beta.2',
        runtimeHint: 'dnx', transport: { type: 'stdio' },
        packageArguments: [{ type: 'positional', value: 'mcp' }, { type: 'positional', value: 'start' }],
      }],
    },
    {
      $schema: SCHEMA_2025_12_11,
      name: `${namespace}/text-tools`,
      description: 'Text editing tools as an MCP bundle.',
      version: '1.0.0',
      packages: [{
        registryType: 'mcpb', identifier: 'https://github.com/acme-labs/text-tools/releases/download/v1.0.0/text-tools.mcpb', version: '1.0.0',
        fileSha256: 'fe333e598595000ae021bd27117db32ec69af6987f507ba7a63c90638ff633ce', transport: { type: 'stdio' },
      }],
    },
    {
      $schema: SCHEMA_2025_12_11,
      name: `${namespace}/hosted`,
      description: 'A hosted server reached over server-sent events.',
      version: '3.1.0',
      remotes: [{ type: 'sse', url: 'https://hosted.acme-labs.example/sse', headers: [{ name: 'X-Api-Key', isRequired: true, isSecret: true }] }],
    },
  ]
}

/** The May-2025 seed shape: `version_detail`, `registry_name`/`name` packages, `transport_type` remotes. */
export function seedDocument(namespace: string): Json {
  return {
    name: `${namespace}/legacy-search`,
    description: 'Web search through the Acme index (seed file shape).',
    repository: { url: 'https://github.com/acme-labs/legacy-search', source: 'github' },
    version_detail: { version: '0.9.0', release_date: '2025-05-01T12:00:00Z', is_latest: true },
    packages: [{
      registry_name: 'npm',
      name: '@acme-labs/legacy-search',
      version: '0.9.0',
      package_arguments: [{ type: 'positional', value_hint: 'profile', is_required: true }],
      environment_variables: [{ name: 'SEARCH_KEY', description: 'Index key', is_required: true, is_secret: true }],
    }],
    remotes: [{ transport_type: 'sse', url: 'https://legacy.acme-labs.example/sse', headers: [{ name: 'X-Key', is_secret: true }] }],
  }
}

/** The 2025-07 shape: `version` and `status` at the top, snake_case packages with a transport. */
export function july2025Document(namespace: string): Json {
  return {
    $schema: 'https://static.modelcontextprotocol.io/schemas/2025-07-09/server.schema.json',
    name: `${namespace}/ledger`,
    description: 'Double-entry bookkeeping over MCP (July 2025 shape).',
    status: 'deprecated',
    version: '2.3.0',
    website_url: 'https://acme-labs.example/ledger',
    packages: [{
      registry_type: 'pypi',
      registry_base_url: 'https://pypi.org',
      identifier: 'acme-ledger',
      version: '2.3.0',
      runtime_hint: 'uvx',
      transport: { type: 'stdio' },
      package_arguments: [{ type: 'named', name: '--book', value_hint: 'book', is_repeated: true }],
      environment_variables: [{ name: 'LEDGER_TOKEN', is_required: true, is_secret: true }],
    }],
    remotes: [{ type: 'streamable-http', url: 'https://ledger.acme-labs.example/mcp' }],
  }
}

/** A small valid document (for the bulk import). */
export function smallDocument(name: string, version = '1.0.0'): Json {
  return {
    name,
    description: 'A small server for the bulk import.',
    version,
    packages: [{ registryType: 'npm', identifier: 'small-mcp-server', version, transport: { type: 'stdio' } }],
  }
}

/** A registry list answer item. */
export function listItem(server: Json, official: Json = {}): Json {
  return { server, _meta: { [OFFICIAL]: { status: 'active', publishedAt: '2026-09-01T10:00:00Z', updatedAt: '2026-09-01T10:00:00Z', isLatest: true, ...official } } }
}
