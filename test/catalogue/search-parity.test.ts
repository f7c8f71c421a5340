import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { createServer, type ServerBody } from '../helpers/catalogue.js'
import { DIALECTS, type TestDialect } from '../helpers/database.js'
import { client, signUp, type Account } from '../helpers/teams.js'

/**
 * A realistic catalogue, the same on both dialects, created in the same order (so ids, the last
 * tie-breaker, are in the same order too). Each query's leading results are set apart on purpose:
 * at most a few names hold the query word, and below them the matches differ in kind (a tag and
 * the description, a tag alone, the description alone), which both bm25 (weights 10/4/1) and
 * ts_rank (weights A/B/C) order alike. No name is a near miss of a query word, so PostgreSQL's
 * typo matching adds nothing to these queries.
 */
const CATALOGUE: Array<{ name: string; description: string; tags: string[] }> = [
  { name: 'PostgreSQL MCP Server', description: 'Read-only access to PostgreSQL databases with schema inspection and query plans.', tags: ['database', 'postgres', 'sql'] },
  { name: 'MySQL MCP Server', description: 'Run read-only SQL queries against MySQL and MariaDB databases.', tags: ['database', 'mysql', 'sql'] },
  { name: 'SQLite Explorer', description: 'Browse tables and run SQL on local SQLite database files.', tags: ['database', 'sqlite'] },
  { name: 'Supabase', description: 'Manage Supabase projects: Postgres tables, auth users and edge functions.', tags: ['backend', 'postgres'] },
  { name: 'Prisma Migrate', description: 'Plan and apply schema migrations for Postgres and MySQL with Prisma.', tags: ['orm', 'migrations'] },
  { name: 'Redis', description: 'Inspect keys, streams and pub sub channels of a Redis instance.', tags: ['cache', 'kv'] },
  { name: 'MongoDB', description: 'Query collections and aggregate documents in MongoDB.', tags: ['database', 'nosql'] },
  { name: 'Slack', description: 'Read channels, post messages and browse the history of a Slack workspace.', tags: ['chat', 'messaging'] },
  { name: 'Discord Bot', description: 'Send messages to Discord channels and read server events.', tags: ['chat'] },
  { name: 'Microsoft Teams', description: 'Post messages and adaptive cards to Teams channels, bridged from Slack.', tags: ['chat', 'microsoft'] },
  { name: 'GitHub', description: 'Issues, pull requests and code search on GitHub.', tags: ['git', 'code'] },
  { name: 'GitLab', description: 'Merge requests, pipelines and issues of GitLab projects.', tags: ['ci', 'devops'] },
  { name: 'Git Repository Tools', description: 'Log, diff, blame and branch operations on a local repository.', tags: ['vcs'] },
  { name: 'Kubernetes MCP Server', description: 'List pods, read logs and apply manifests in a Kubernetes cluster.', tags: ['kubernetes', 'devops'] },
  { name: 'Helm Charts', description: 'Install and upgrade Helm charts on Kubernetes clusters.', tags: ['devops'] },
  { name: 'Docker', description: 'Manage containers, images and volumes of the local Docker engine.', tags: ['containers', 'devops'] },
  { name: 'Weather Forecast', description: 'Current conditions and seven day forecasts from the Open-Meteo weather API.', tags: ['weather', 'api'] },
  { name: 'Climate Data', description: 'Historical weather records by station through a REST API.', tags: ['climate'] },
  { name: 'Storm Tracker', description: 'Severe weather warnings and radar images.', tags: ['weather'] },
  { name: 'Air Quality', description: 'Pollution and pollen levels by city from a public API.', tags: ['environment'] },
  { name: 'File System Access', description: 'Read, write and move files in allowed directories of the local file system.', tags: ['files', 'filesystem'] },
  { name: 'Backup Agent', description: 'Snapshots of the file system to remote storage.', tags: ['backup'] },
  { name: 'Google Drive', description: 'List and download files from Google Drive.', tags: ['files', 'google'] },
  { name: 'S3 Storage', description: 'List buckets and fetch objects from Amazon S3 or compatible storage.', tags: ['files', 'aws'] },
  { name: 'Browserbase', description: 'Cloud browser sessions for agents.', tags: ['browser'] },
  { name: 'Puppeteer', description: 'Automate a headless Chrome browser: navigate, click, fill forms and take screenshots.', tags: ['browser', 'automation'] },
  { name: 'Playwright', description: 'Drive Chromium, Firefox and WebKit through the accessibility tree.', tags: ['browser', 'testing'] },
  { name: 'Fetch', description: 'Fetch web pages and convert them to Markdown.', tags: ['web'] },
  { name: 'Brave Search', description: 'Web and local search through the Brave Search API.', tags: ['search', 'web'] },
  { name: 'Exa', description: 'Neural web search for research agents.', tags: ['search', 'research'] },
  { name: 'Elasticsearch', description: 'Query indices and inspect mappings of an Elasticsearch cluster.', tags: ['search', 'database'] },
  { name: 'Sentry', description: 'Fetch issues, stack traces and releases from Sentry.', tags: ['monitoring', 'errors'] },
  { name: 'Grafana', description: 'Browse dashboards and query Prometheus data sources.', tags: ['monitoring'] },
  { name: 'Notion', description: 'Read and update pages and databases in Notion.', tags: ['notes', 'productivity'] },
  { name: 'Linear', description: 'Create and update issues and projects in Linear.', tags: ['issues', 'productivity'] },
  { name: 'Jira', description: 'Query issues with JQL and transition tickets in Jira.', tags: ['issues'] },
  { name: 'Stripe', description: 'Customers, payments and subscriptions through the Stripe API.', tags: ['payments', 'api'] },
  { name: 'Google Maps', description: 'Geocoding, directions and places with the Google Maps API.', tags: ['maps', 'api'] },
  { name: 'Time', description: 'Current time and time zone conversions.', tags: ['utilities'] },
  { name: 'Memory Graph', description: 'Persistent knowledge graph memory for agents.', tags: ['memory'] },
  { name: 'Snowflake', description: 'Run SQL on Snowflake warehouses and list database schemas.', tags: ['database', 'warehouse', 'sql'] },
  { name: 'BigQuery', description: 'Query Google BigQuery datasets with standard SQL.', tags: ['database', 'analytics'] },
]

/** Each query with the server that must lead on both dialects (a name match, or the best tag match). */
const QUERIES: Array<[string, string]> = [
  ['postgres', 'postgresql-mcp-server'],
  ['postg', 'postgresql-mcp-server'],
  ['slack', 'slack'],
  ['git', 'github'],
  ['kube', 'kubernetes-mcp-server'],
  ['weather api', 'weather-forecast'],
  ['file system', 'file-system-access'],
  ['browser', 'browserbase'],
  ['sql database', 'sqlite-explorer'],
  ['search', 'brave-search'],
]

interface Result { slugs: string[]; total: number }

describe('search ranks alike on SQLite and PostgreSQL', () => {
  const sides = new Map<TestDialect, { ctx: TestContext; app: FastifyInstance; admin: Account }>()

  beforeAll(async () => {
    await Promise.all(DIALECTS.map(async (dialect) => {
      const ctx = await createTestContext(dialect)
      const app = (await ctx.build()).app
      const admin = await signUp(app, `parity_${dialect}`)
      sides.set(dialect, { ctx, app, admin })
      for (const server of CATALOGUE) await createServer(client(app), admin, server)
    }))
  }, 90_000)
  afterAll(() => Promise.all([...sides.values()].map(({ ctx }) => ctx.close())))

  async function search(dialect: TestDialect, q: string): Promise<Result> {
    const { app, admin } = sides.get(dialect)!
    const response = await app.inject({ method: 'GET', url: `/api/mcp/servers/search?${new URLSearchParams({ q, limit: '100' })}`, headers: { cookie: admin.cookie } })
    expect(response.statusCode, `${dialect}: ${response.body}`).toBe(200)
    const { servers, pagination } = response.json().data as { servers: ServerBody[]; pagination: { total: number } }
    return { slugs: servers.map((server) => server.slug), total: pagination.total }
  }

  it('the catalogue is the same on both sides', async () => {
    for (const dialect of DIALECTS) {
      const { app, admin } = sides.get(dialect)!
      const response = await app.inject({ method: 'GET', url: '/api/mcp/servers?limit=100', headers: { cookie: admin.cookie } })
      expect(response.json().data.pagination.total).toBe(CATALOGUE.length)
    }
  })

  it.each(QUERIES)('q=%j: the same leading servers in the same order, the same total', async (q, leader) => {
    const [sqlite, postgresql] = await Promise.all([search('sqlite', q), search('postgresql', q)])
    const top = Math.min(5, sqlite.total)
    expect(top).toBeGreaterThan(1)
    expect(sqlite.slugs[0]).toBe(leader)
    expect(postgresql.slugs.slice(0, top), `sqlite: ${sqlite.slugs.join(', ')}`).toEqual(sqlite.slugs.slice(0, top))
    expect(postgresql.total).toBe(sqlite.total)
    // Beyond the leading five, the order may differ (bm25 normalizes by length, ts_rank does not); the servers may not.
    expect([...postgresql.slugs].sort()).toEqual([...sqlite.slugs].sort())
  })
})
