/**
 * Finding the programs packages run with: on the satellite's PATH, as a shell would, but without
 * one, so the sandbox can be told exactly which file to make visible.
 */
import { accessSync, constants, statSync } from 'node:fs'
import { delimiter, dirname, isAbsolute, join } from 'node:path'

/** The absolute path `name` runs as on `path`, or undefined when it is not there. */
export function findExecutable(name: string, path = process.env.PATH ?? ''): string | undefined {
  if (name.includes('/')) return isRunnable(name) ? name : undefined
  for (const dir of path.split(delimiter)) {
    if (dir === '' || !isAbsolute(dir)) continue
    const candidate = join(dir, name)
    if (isRunnable(candidate)) return candidate
  }
  return undefined
}

/** npx on PATH, or the one installed beside this satellite's own node. */
export function findNpx(path = process.env.PATH ?? ''): string | undefined {
  return findExecutable('npx', path) ?? findExecutable(join(dirname(process.execPath), 'npx'))
}

/**
 * Files a runner needs beside itself: uvx is a small launcher that runs the `uv` found next to
 * it, so a sandbox that shows uvx alone could not run anything.
 */
export function companionsOf(program: string): string[] {
  if (!program.endsWith('/uvx')) return []
  const uv = join(dirname(program), 'uv')
  return isRunnable(uv) ? [uv] : []
}

function isRunnable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK)
    return statSync(path).isFile()
  } catch {
    return false
  }
}
