import cookie from '@fastify/cookie'
import BetterSqlite3 from 'better-sqlite3'
import Fastify from 'fastify'
import pg from 'pg'
import { RowStatement } from '../src/db/readers/pg-row-statement.js'
import { deriveKey } from '../src/lib/keys.js'
import { createDigester } from '../src/lib/tokens.js'

/**
 * The floor of a session-authenticated read on this stack: the least any implementation must do
 * for `GET /api/users/me` with a session cookie — parse the cookie, digest the session id (HMAC),
 * run one prepared statement on the service's own database (the live session, its user and the
 * user's default team, as the service does), answer a small JSON through a response schema — and,
 * without a cookie, a 401 envelope. No logging, no request id, no security headers, no policy,
 * no ORM: what is left is the framework, the driver and the database.
 *
 * The bench runs it against the same database as the service, right after the bare route, so the
 * service's figures can be read against what the stack allows, not only against a route that
 * touches no database.
 */

const LOOKUP = `select s.id, s.expires_at, u.id, u.username, u.email, u.created_at, t.id
  from sessions s inner join users u on u.id = s.user_id
  left join teams t on t.owner_id = u.id and t.is_default = $true
  where s.digest = $1 and s.expires_at > $2`

type Row = [string, unknown, string, string, string, unknown, string | null]

function lookup(url: string): (digest: string) => Promise<Row | undefined> {
  if (url.startsWith('sqlite:')) {
    const client = new BetterSqlite3(url.slice('sqlite:'.length))
    client.pragma('journal_mode = WAL')
    const statement = client.prepare(LOOKUP.replace('$true', '1').replace('$1', '?').replace('$2', '?')).raw(true)
    return async (digest) => statement.get(digest, Date.now()) as Row | undefined
  }
  // The service's own way with pg (src/db/readers/pg-row-statement.ts): a named statement whose result is
  // described once, then Bind, Execute and Sync per lookup.
  const pool = new pg.Pool({ connectionString: url, max: 10 })
  const statement = new RowStatement('floor_lookup', LOOKUP.replace('$true', 'true'), (oid) => pg.types.getTypeParser(oid, 'text'))
  return async (digest) => {
    const client = await pool.connect()
    try {
      return await new Promise<Row | undefined>((resolve, reject) => {
        client.query(statement.run([digest, new Date()]) as never, ((error: Error | null, row?: unknown[]) => (error ? reject(error) : resolve(row as Row | undefined))) as never)
      })
    } finally {
      client.release()
    }
  }
}

const find = lookup(process.env.DATABASE_URL!)
const digest = createDigester(deriveKey(process.env.ENCRYPTION_SECRET!, 'token-digest'))
const app = Fastify({ logger: false })
await app.register(cookie)
const User = {
  type: 'object',
  properties: {
    success: { type: 'boolean' },
    data: { type: 'object', properties: { id: { type: 'string' }, username: { type: 'string' }, email: { type: 'string' }, default_team_id: { type: ['string', 'null'] } } },
  },
} as const
const Refusal = { type: 'object', properties: { success: { type: 'boolean' }, error: { type: 'object', properties: { code: { type: 'string' }, message: { type: 'string' } } } } } as const
app.get('/api/users/me', { schema: { response: { 200: User, 401: Refusal } } }, async (request, reply) => {
  const id = request.cookies.auth_session
  const row = id === undefined ? undefined : await find(digest(id))
  if (row === undefined) {
    reply.code(401)
    return { success: false, error: { code: 'UNAUTHORIZED', message: 'Authentication required.' } }
  }
  return { success: true, data: { id: row[2], username: row[3], email: row[4], default_team_id: row[6] } }
})
app.get('/api/health', async () => ({ success: true, data: { status: 'ok' } }))
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' })
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)))
