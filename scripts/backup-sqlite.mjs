// Online backup of the service's SQLite database, safe while the service runs:
//
//   node scripts/backup-sqlite.mjs <database file> <backup file>
//
// Copying the .db file with cp is not safe: in WAL mode recent commits live in the -wal file, and
// a copy taken during a write can be torn. This uses SQLite's online backup API (better-sqlite3's
// db.backup()), which copies a consistent snapshot with what the -wal file holds. The copy is
// written beside the target as <backup file>.partial, checked with PRAGMA integrity_check, and
// only then renamed to <backup file>, so a backup file that exists is a complete one. The live
// database's content is only read.
// See docs/backups.md.
import { existsSync, renameSync, rmSync, statSync } from 'node:fs'
import Database from 'better-sqlite3'

const [source, target] = process.argv.slice(2)
if (source === undefined || target === undefined) {
  console.error('usage: node scripts/backup-sqlite.mjs <database file> <backup file>')
  process.exit(2)
}
if (!existsSync(source)) {
  console.error(`no database at ${source}`)
  process.exit(1)
}
// A backup is never overwritten: an older one may be the only good copy left.
if (existsSync(target)) {
  console.error(`${target} exists already; choose a new name`)
  process.exit(1)
}

const partial = `${target}.partial`
rmSync(partial, { force: true })

const live = new Database(source, { fileMustExist: true })
try {
  // All remaining pages in one step: a step reads inside one read transaction, so the copy is one
  // snapshot, and no write by the service between small steps can make SQLite start over.
  await live.backup(partial, { progress: () => 0x7fffffff })
} finally {
  live.close()
}

const copy = new Database(partial)
// The copy keeps the live file's WAL mode; a backup is one self-contained file instead (the
// service switches a restored file back to WAL when it opens it).
copy.pragma('journal_mode = DELETE')
const integrity = copy.pragma('integrity_check', { simple: true })
// The migrations the copy has applied: compare with the version you restore it under.
const migrations = copy.prepare('select count(*) as applied from __drizzle_migrations').get().applied
copy.close()
if (integrity !== 'ok') {
  rmSync(partial, { force: true })
  console.error(`the copy failed its integrity check (${integrity}); nothing was written`)
  process.exit(1)
}
renameSync(partial, target)
console.log(`backed up ${source} to ${target}: ${statSync(target).size} bytes, integrity ok, ${migrations} migrations applied`)
