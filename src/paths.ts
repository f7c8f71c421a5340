import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The folder holding package.json, whether running from src/ (tests) or dist/src/ (built). */
function findProjectRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url))
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir)
    if (parent === dir) throw new Error('package.json not found above ' + fileURLToPath(import.meta.url))
    dir = parent
  }
  return dir
}

export const projectRoot = findProjectRoot()

export const migrationsFolder = (dialect: 'sqlite' | 'pg'): string => join(projectRoot, 'migrations', dialect)

export const packageVersion: string = (
  JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8')) as { version: string }
).version
