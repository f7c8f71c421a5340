import { randomBytes } from 'node:crypto'
import pg from 'pg'

export const DIALECTS = ['sqlite', 'postgresql'] as const
export type TestDialect = (typeof DIALECTS)[number]

/** The test server's maintenance database, where test databases are created and dropped. */
export const ADMIN_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'

export interface TestDatabase {
  /** A DATABASE_URL for the app. */
  url: string
  drop(): Promise<void>
}

/**
 * A database of its own for one test file and dialect: a fresh PostgreSQL database created
 * from TEST_DATABASE_URL (dropped afterwards), or a SQLite file in `dir` (in-memory when absent).
 */
export async function createTestDatabase(dialect: TestDialect, dir?: string): Promise<TestDatabase> {
  if (dialect === 'sqlite') {
    return { url: dir === undefined ? 'sqlite::memory:' : `sqlite:${dir}/test.db`, drop: async () => {} }
  }
  const name = `svc_test_${randomBytes(6).toString('hex')}`
  await adminQuery(`create database ${name}`)
  const url = new URL(ADMIN_URL)
  url.pathname = `/${name}`
  return { url: url.toString(), drop: () => adminQuery(`drop database if exists ${name} with (force)`) }
}

/** One statement on the maintenance database (create or drop a database). */
export async function adminQuery(statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: ADMIN_URL })
  await client.connect()
  try {
    await client.query(statement)
  } finally {
    await client.end()
  }
}
