import { existsSync, readdirSync, statSync } from 'node:fs'
import { join, relative, sep } from 'node:path'
import { pathToFileURL } from 'node:url'
import { projectRoot } from '../paths.js'

/** A folder of PLUGINS_DIR that is a plugin candidate. */
export interface PluginFolder {
  name: string
  path: string
}

/**
 * The plugin folders of `dir`, by name. Hidden folders and `node_modules` are not plugins; a
 * missing directory means no plugins.
 */
export function pluginFolders(dir: string): PluginFolder[] {
  if (!existsSync(dir)) return []
  return readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && !entry.name.startsWith('.') && entry.name !== 'node_modules')
    .map((entry) => ({ name: entry.name, path: join(dir, entry.name) }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
}

/**
 * The file to import for a plugin folder, or null when it has neither `index.js` nor
 * `index.ts`. An `index.ts` inside this project is compiled by `npm run build` to the same path
 * under `dist/`; that build is used when it is at least as new as the source. Otherwise the
 * source itself is imported, which works under a TypeScript-aware runner (the tests) and fails
 * under plain Node with a clear reason.
 */
export function entryFile(folder: string): string | null {
  const js = join(folder, 'index.js')
  if (existsSync(js)) return js
  const ts = join(folder, 'index.ts')
  if (!existsSync(ts)) return null
  const inProject = relative(projectRoot, folder)
  if (!inProject.startsWith('..') && !inProject.startsWith(`dist${sep}`) && inProject !== 'dist') {
    const built = join(projectRoot, 'dist', inProject, 'index.js')
    if (existsSync(built) && statSync(built).mtimeMs >= statSync(ts).mtimeMs) return built
  }
  return ts
}

/** Imports a plugin's entry file and returns its default export; the reason in words when that fails. */
export async function importPlugin(file: string): Promise<{ exported: unknown } | { reason: string }> {
  try {
    const module = (await import(pathToFileURL(file).href)) as { default?: unknown }
    if (module.default === undefined) return { reason: 'the module has no default export (export default definePlugin({...}))' }
    return { exported: module.default }
  } catch (error) {
    const code = (error as { code?: unknown }).code
    if (code === 'ERR_UNKNOWN_FILE_EXTENSION' && file.endsWith('.ts')) {
      return { reason: 'index.ts is not built: run `npm run build` (a plugin outside this project ships index.js)' }
    }
    return { reason: `import failed: ${describe(error)}` }
  }
}

/** One line for the listing: the error's own message, never its stack. */
export function describe(error: unknown): string {
  if (error instanceof Error) return `${error.name === 'Error' ? '' : `${error.name}: `}${error.message}`.slice(0, 1000)
  return String(error).slice(0, 1000)
}
