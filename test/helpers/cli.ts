import { execFile } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface CliRun { code: number; stdout: string; stderr: string }

/** A built CLI as its own process, in an empty directory (no `.env`), with `env` as its whole environment. */
export function runCli(entry: string, args: string[], env: Record<string, string>): Promise<CliRun> {
  const cwd = mkdtempSync(join(tmpdir(), 'svc-cli-'))
  return new Promise((resolve) => {
    execFile(process.execPath, [entry, ...args], { cwd, env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'silent', ...env } }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr })
    })
  })
}
