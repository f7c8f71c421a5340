/**
 * Running the official MCP conformance suite (`@modelcontextprotocol/conformance`, installed in
 * test/runtimes, run with Node 22) against a server URL, and reading what it found: each
 * scenario writes its checks to `<output>/server-<scenario>-<time>/checks.json`, each check
 * `SUCCESS`, `FAILURE`, `WARNING`, `INFO` or `SKIPPED`.
 */
import { execFile } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CONFORMANCE_CLI, nodeBinary } from './runtimes.js'

/**
 * Every server scenario of version 0.1.16, each naming what the server must do in its
 * description. `json-schema-2020-12` and `server-sse-polling` are "pending" there, so only
 * `--suite all` runs them; they test what a relay most easily loses (a tool's full input schema,
 * a stream resumed with Last-Event-ID), so they are run too.
 */
export const SERVER_SCENARIOS = [
  'server-initialize', 'logging-set-level', 'ping', 'completion-complete', 'tools-list', 'tools-call-simple-text',
  'tools-call-image', 'tools-call-audio', 'tools-call-embedded-resource', 'tools-call-mixed-content',
  'tools-call-with-logging', 'tools-call-error', 'tools-call-with-progress', 'tools-call-sampling',
  'tools-call-elicitation', 'json-schema-2020-12', 'elicitation-sep1034-defaults', 'server-sse-polling',
  'server-sse-multiple-streams', 'elicitation-sep1330-enums', 'resources-list', 'resources-read-text',
  'resources-read-binary', 'resources-templates-read', 'resources-subscribe', 'resources-unsubscribe',
  'prompts-list', 'prompts-get-simple', 'prompts-get-with-args', 'prompts-get-embedded-resource',
  'prompts-get-with-image', 'dns-rebinding-protection',
] as const

export type CheckStatus = 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | 'SKIPPED'

export interface Check {
  id: string
  name: string
  description: string
  status: CheckStatus
  errorMessage?: string
  details?: unknown
}

/** scenario → its checks, in the order the suite made them. */
export type Results = Map<string, Check[]>

/** What one scenario concluded about one check id: its worst verdict, or `INFO` when it only informed. */
export type Verdict = 'SUCCESS' | 'WARNING' | 'FAILURE' | 'INFO'

const RANK: Record<CheckStatus, number> = { SKIPPED: 0, INFO: 0, SUCCESS: 1, WARNING: 2, FAILURE: 3 }
const RESULT_DIR = /^server-(.+)-(\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z)$/

/**
 * One run of the CLI over every scenario (one Node 22 process: starting it costs more than most
 * scenarios). Fails when it ends without the results of every scenario of SERVER_SCENARIOS.
 */
export async function runServerScenarios(url: string, { timeoutMs = 150_000 } = {}): Promise<Results> {
  const output = mkdtempSync(join(tmpdir(), 'mcp-conformance-'))
  try {
    const ran = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      execFile(nodeBinary(22), [CONFORMANCE_CLI, 'server', '--url', url, '--suite', 'all', '-o', output], { timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
        // Exit code 1 only says that some check failed; the checks say which.
        resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr })
      })
    })
    const results: Results = new Map()
    for (const entry of readdirSync(output)) {
      const scenario = RESULT_DIR.exec(entry)?.[1]
      if (scenario !== undefined) results.set(scenario, JSON.parse(readFileSync(join(output, entry, 'checks.json'), 'utf8')) as Check[])
    }
    const missing = SERVER_SCENARIOS.filter((scenario) => !results.has(scenario))
    const unknown = [...results.keys()].filter((scenario) => !(SERVER_SCENARIOS as readonly string[]).includes(scenario))
    if (missing.length > 0 || unknown.length > 0 || ran.code === null) {
      throw new Error(`the conformance suite against ${url} ${ran.code === null ? 'was stopped (timeout or signal)' : `exited with ${ran.code}`}; `
        + `scenarios without results: ${missing.join(', ') || 'none'}; unexpected: ${unknown.join(', ') || 'none'}\n${ran.stderr.slice(-4000)}`)
    }
    return results
  } finally {
    rmSync(output, { recursive: true, force: true })
  }
}

/** check id → its verdict in one scenario. */
export function verdicts(checks: readonly Check[]): Map<string, Verdict> {
  const found = new Map<string, Verdict>()
  for (const check of checks) {
    const known = found.get(check.id)
    const verdict: Verdict = check.status === 'SKIPPED' ? 'INFO' : check.status
    if (known === undefined || RANK[verdict] > RANK[known]) found.set(check.id, verdict)
  }
  return found
}

/** `scenario › check: STATUS — message` for every check with that status. */
export function checksWith(results: Results, status: CheckStatus): string[] {
  return [...results].flatMap(([scenario, checks]) => checks.filter((check) => check.status === status).map((check) => describe(scenario, check)))
}

/**
 * A check that counts one way `expected` (SUCCESS, WARNING or FAILURE) and another in `actual` —
 * including one missing there, or only informing there (a scenario that found its subject
 * absent informs instead of checking). `allowed` lists `scenario › check` pairs that may read
 * INFO in `actual` instead of what they read in `expected`. Each difference is one readable line.
 */
export function differences(expected: Results, actual: Results, allowed: readonly string[] = []): string[] {
  const lines: string[] = []
  for (const scenario of SERVER_SCENARIOS) {
    const want = verdicts(expected.get(scenario) ?? [])
    const got = verdicts(actual.get(scenario) ?? [])
    for (const id of new Set([...want.keys(), ...got.keys()])) {
      const [wanted, seen] = [want.get(id) ?? 'absent', got.get(id) ?? 'absent']
      if (wanted === seen || (wanted === 'INFO' && seen === 'absent') || (wanted === 'absent' && seen === 'INFO')) continue
      if (seen === 'INFO' && allowed.includes(`${scenario} › ${id}`)) continue
      const evidence = (actual.get(scenario) ?? []).filter((check) => check.id === id && check.status !== 'INFO').map((check) => check.errorMessage ?? check.description)
      const said = evidence.length > 0 ? evidence : (actual.get(scenario) ?? []).filter((check) => check.id === id).map((check) => informed(check))
      lines.push(`${scenario} › ${id}: ${seen} instead of ${wanted}${said.length > 0 ? ` — ${[...new Set(said)].join(' | ')}` : ''}`)
    }
  }
  return lines
}

function describe(scenario: string, check: Check): string {
  return `${scenario} › ${check.id}: ${check.status} — ${check.errorMessage ?? check.description}`
}

/** What an INFO check said: its details' message when it has one. */
function informed(check: Check): string {
  const message = (check.details as { message?: unknown } | undefined)?.message
  return typeof message === 'string' ? message : check.description
}
