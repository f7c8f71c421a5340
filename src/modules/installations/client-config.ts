import type { ClientConfigDocument, ClientConfigFormat } from './schemas.js'

type Entries = Record<string, { type: 'http'; url: string }>

/** The document a client reads: the same entries under the key its format names. */
export const clientConfigDocument = (format: ClientConfigFormat, servers: Entries): ClientConfigDocument =>
  format === 'vscode' ? { servers } : { mcpServers: servers }

/**
 * The name a download is saved under: the file each client reads. Claude Code reads `.mcp.json` at a
 * project's root; Cursor `.cursor/mcp.json` (or `~/.cursor/mcp.json`); VS Code `.vscode/mcp.json`.
 */
export const CLIENT_CONFIG_FILE_NAMES: Readonly<Record<ClientConfigFormat, string>> = { mcpServers: '.mcp.json', vscode: 'mcp.json' }

/** `download=1` or `download=true`. */
export const wantsDownload = (download: string | undefined): boolean => download === '1' || download === 'true'
