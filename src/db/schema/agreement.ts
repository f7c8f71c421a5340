import type * as pg from './pg/index.js'
import type * as sqlite from './sqlite/index.js'

/**
 * The two schema folders must describe the same tables: repositories are typed once, against the
 * PostgreSQL tables (types.ts), and run on SQLite's through a cast. This file holds `tsc` to it. A
 * table exported by one dialect only fails the build here, and so does a table whose rows differ
 * between the two (a column, its type, whether it may be null) or whose SQLite table would refuse
 * an insert typed for PostgreSQL (a column SQLite requires and PostgreSQL fills itself). Inserts
 * are held one way only: a key SQLite fills itself (its integer primary key, the rowid) may be
 * one PostgreSQL must be given, or generates and takes from no one. Types only: nothing of it runs.
 */

type Pg = typeof pg
type Sqlite = typeof sqlite

/**
 * Columns one dialect has by design, left out of the comparison: PostgreSQL's generated full-text
 * vector of a server (SQLite searches an FTS5 table of its own instead, see the catalogue migration).
 */
interface OneDialectOnly {
  mcpServers: 'searchVector'
}

/** True when A and B are the same type (not merely assignable one way). */
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false

type Skipped<Name> = Name extends keyof OneDialectOnly ? OneDialectOnly[Name] : never
type Row<Table, Skip extends PropertyKey> = Table extends { $inferSelect: infer R } ? Omit<R, Skip> : never
type Insert<Table, Skip extends PropertyKey> = Table extends { $inferInsert: infer R } ? Omit<R, Skip> : never
type Agree<P, S, Skip extends PropertyKey> = Same<Row<P, Skip>, Row<S, Skip>> extends true
  ? [Insert<P, Skip>] extends [Insert<S, Skip>] ? true : false
  : false

type Shared = keyof Pg & keyof Sqlite

/** Every table that breaks the agreement: in one dialect only, or not agreeing with its namesake. */
type Disagreeing = {
  [Name in keyof Pg | keyof Sqlite]: Name extends Shared ? (Agree<Pg[Name], Sqlite[Name], Skipped<Name>> extends true ? never : Name) : Name
}

/**
 * Compiles only while no table disagrees; else `tsc` prints the names of those that do, as
 * "Type '{ disagreeing: "…" }' does not satisfy the constraint '{ disagreeing: never }'".
 */
type Check<T extends { disagreeing: never }> = T
export type SchemasAgree = Check<{ disagreeing: Disagreeing[keyof Pg | keyof Sqlite] }>
