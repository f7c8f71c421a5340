import { againstBare, type Measurement } from './harness.js'

/** Documents per import request: the most one request may hold. */
const DOCUMENTS = 1000

/** A server.json document (2025-12-11) as publishers write them: a package with an input, a remote. */
function document(i: number, version: string) {
  return {
    $schema: 'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json',
    name: `io.github.bench/server-${i}`,
    title: `Bench server ${i}`,
    description: `Benchmark server number ${i}, with one package and one remote.`,
    version,
    repository: { url: `https://github.com/bench/server-${i}`, source: 'github' },
    packages: [{
      registryType: 'npm', identifier: `@bench/server-${i}`, version, transport: { type: 'stdio' },
      environmentVariables: [{ name: 'API_KEY', description: 'The key', isRequired: true, isSecret: true }],
    }],
    remotes: [{ type: 'streamable-http', url: `https://mcp.example.com/bench/${i}` }],
  }
}

export interface RegistryFigures {
  imports: Array<{ run: string; documents: number; ms: number; counts: Record<string, number> }>
  walk: { items: number; pages: number; ms: number }
  measurements: Measurement[]
}

async function importAll(url: string, cookie: string, body: unknown[]): Promise<{ ms: number; counts: Record<string, number> }> {
  const began = performance.now()
  const response = await fetch(`${url}/api/mcp/servers/import`, { method: 'POST', headers: { cookie, 'content-type': 'application/json' }, body: JSON.stringify(body) })
  const ms = performance.now() - began
  const answer = await response.json() as { data?: { counts: Record<string, number> } }
  if (response.status !== 200 || answer.data === undefined) throw new Error(`import answered ${response.status}`)
  return { ms: Math.round(ms), counts: answer.data.counts }
}

/**
 * The registry workloads, against a running server with an empty catalogue: importing 1 000
 * documents (new, then the same again, then each with a new version), walking the sub-registry
 * API to its end with pages of 100, and the first page of its list under load next to the bare route.
 */
export async function registryWorkloads(url: string, cookie: string, bareUrl: string): Promise<RegistryFigures> {
  const imports: RegistryFigures['imports'] = []
  const first = Array.from({ length: DOCUMENTS }, (_, i) => document(i, '1.0.0'))
  const second = Array.from({ length: DOCUMENTS }, (_, i) => document(i, '1.1.0'))
  for (const [run, body] of [['new servers', first], ['the same again', first], ['a new version of each', second]] as const) {
    imports.push({ run, documents: body.length, ...await importAll(url, cookie, body) })
  }

  const began = performance.now()
  let items = 0
  let pages = 0
  let cursor: string | undefined
  do {
    const query = `limit=100${cursor === undefined ? '' : `&cursor=${encodeURIComponent(cursor)}`}`
    const response = await fetch(`${url}/api/registry/v0.1/servers?${query}`, { headers: { cookie } })
    const page = await response.json() as { servers: unknown[]; metadata: { nextCursor?: string } }
    items += page.servers.length
    pages += 1
    cursor = page.metadata.nextCursor
  } while (cursor !== undefined)
  const walk = { items, pages, ms: Math.round(performance.now() - began) }

  const measurements = [
    await againstBare(bareUrl, `GET /api/registry/v0.1/servers?limit=30 (session, ${items} items)`, `${url}/api/registry/v0.1/servers?limit=30`, { headers: { cookie } }),
  ]
  return { imports, walk, measurements }
}

/** The figures as lines for the report. */
export function registryLines(figures: RegistryFigures): string[] {
  return [
    ...figures.imports.map(({ run, documents, ms, counts }) => `import of ${documents} documents, ${run}: ${ms} ms (${Math.round(documents / (ms / 1000))}/s; ${Object.entries(counts).filter(([, n]) => n > 0).map(([k, n]) => `${n} ${k}`).join(', ')})`),
    `sub-registry walked with nextCursor: ${figures.walk.items} items in ${figures.walk.pages} pages of 100, ${figures.walk.ms} ms`,
  ]
}
